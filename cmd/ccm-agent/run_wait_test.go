package main

import (
	"net"
	"os/exec"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	"github.com/onsi/gomega/gexec"

	"github.com/ccm-fleet/ccm/broker"
	"github.com/ccm-fleet/ccm/broker/brokertest"
)

var _ = Describe("ccm-agent run while NATS is unreachable", Ordered, func() {
	var bin string
	BeforeAll(func() {
		var err error
		bin, err = gexec.Build("github.com/ccm-fleet/ccm/cmd/ccm-agent")
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(gexec.CleanupBuildArtifacts)
	})

	// start runs the agent against addr, where nothing listens yet.
	start := func(addr string) *gexec.Session {
		GinkgoHelper()
		dir := GinkgoT().TempDir()
		cmd := exec.Command(bin, "run", "-s", "nats://"+addr, "--identity", "wait-1", "--insecure", "--state-dir", dir)
		cmd.Env = append(cmd.Environ(), "XDG_CONFIG_HOME="+dir, "HOME="+dir)
		s, err := gexec.Start(cmd, GinkgoWriter, GinkgoWriter)
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(func() { s.Kill().Wait(20 * time.Second) })
		Eventually(s.Err).WithTimeout(60 * time.Second).Should(gbytes.Say(`NATS not reachable; retrying`))
		Consistently(s, 2*time.Second).ShouldNot(gexec.Exit(), "the agent gave up waiting for NATS")
		return s
	}

	It("keeps waiting, then serves once a broker listens on its server", func() {
		addr := freeAddr()
		s := start(addr)
		brokertest.StartConfig(GinkgoT(), broker.Config{Listen: addr})
		Eventually(s.Err).WithTimeout(60 * time.Second).Should(gbytes.Say(`msg=serving`))
		s.Signal(syscall.SIGTERM)
		Eventually(s).WithTimeout(60 * time.Second).Should(gexec.Exit(0))
	})

	It("exits 0 on SIGTERM while waiting", func() {
		s := start(freeAddr())
		s.Signal(syscall.SIGTERM)
		Eventually(s).WithTimeout(20 * time.Second).Should(gexec.Exit(0))
		Expect(s.Err).To(gbytes.Say("stopped before NATS was reachable"))
	})
})

// freeAddr returns a 127.0.0.1 address with a port that was free a moment
// ago.
func freeAddr() string {
	GinkgoHelper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).ToNot(HaveOccurred())
	defer l.Close()
	return l.Addr().String()
}
