package main

import (
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
	var startCommand func(addr string, command ...string) *gexec.Session
	BeforeAll(func() {
		var err error
		bin, err = gexec.Build("github.com/ccm-fleet/ccm/cmd/ccm-agent")
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(gexec.CleanupBuildArtifacts)
	})

	// start runs the agent against addr, where nothing listens yet.
	start := func(addr string, args ...string) *gexec.Session {
		GinkgoHelper()
		return startCommand(addr, append([]string{"run", "--identity", "wait-1"}, args...)...)
	}
	// startCommand runs command (run or simulate) against addr, where
	// nothing listens yet, and waits until it says it is retrying.
	startCommand = func(addr string, command ...string) *gexec.Session {
		GinkgoHelper()
		dir := GinkgoT().TempDir()
		cmd := exec.Command(bin, append(command, "-s", "nats://"+addr, "--insecure", "--state-dir", dir)...)
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

	It("simulate: its agents keep waiting too, then serve once a broker listens", func() {
		addr := freeAddr()
		s := startCommand(addr, "simulate", "--count", "3")
		brokertest.StartConfig(GinkgoT(), broker.Config{Listen: addr})
		Eventually(s.Err).WithTimeout(60 * time.Second).Should(gbytes.Say(`3 simulated agents serving`))
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

var _ = Describe("ccm-agent run logging", Ordered, func() {
	var bin string
	BeforeAll(func() {
		var err error
		bin, err = gexec.Build("github.com/ccm-fleet/ccm/cmd/ccm-agent")
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(gexec.CleanupBuildArtifacts)
	})

	// firstLine runs the agent against an address where nothing listens
	// and returns its first line on stderr.
	firstLine := func(config string, args ...string) string {
		GinkgoHelper()
		dir := GinkgoT().TempDir()
		cfg := filepath.Join(dir, "agent.yaml")
		Expect(os.WriteFile(cfg, []byte(config), 0o600)).To(Succeed())
		cmd := exec.Command(bin, append(args, "run", "--config", cfg, "-s", "nats://"+freeAddr(), "--identity", "log-1", "--insecure", "--state-dir", dir)...)
		cmd.Env = append(cmd.Environ(), "XDG_CONFIG_HOME="+dir, "HOME="+dir)
		s, err := gexec.Start(cmd, GinkgoWriter, GinkgoWriter)
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(func() { s.Kill().Wait(20 * time.Second) })
		Eventually(s.Err).WithTimeout(60 * time.Second).Should(gbytes.Say(`NATS not reachable; retrying.*\n`))
		return strings.SplitN(string(s.Err.Contents()), "\n", 2)[0]
	}

	It("logs JSON objects when agent.yaml says log.format: json", func() {
		line := firstLine("log: {format: json}\n")
		var obj map[string]any
		Expect(json.Unmarshal([]byte(line), &obj)).To(Succeed(), line)
		Expect(obj).To(HaveKeyWithValue("level", "WARN"))
		Expect(obj).To(HaveKeyWithValue("msg", "NATS not reachable; retrying"))
		Expect(obj).To(HaveKey("error"))
	})

	It("lets --log-format override the file", func() {
		line := firstLine("log: {format: json}\n", "--log-format", "text")
		Expect(line).To(HavePrefix("time="))
		Expect(line).To(ContainSubstring(`level=WARN msg="NATS not reachable; retrying"`))
	})

	It("refuses an unknown --log-format or log.format", func() {
		code, _, errOut := agent("--log-format", "xml", "run", "--insecure")
		Expect(code).To(Equal(1))
		Expect(errOut).To(ContainSubstring("xml"))
		cfg := filepath.Join(GinkgoT().TempDir(), "agent.yaml")
		Expect(os.WriteFile(cfg, []byte("log: {format: xml}\n"), 0o600)).To(Succeed())
		code, _, errOut = agent("run", "--config", cfg, "--insecure")
		Expect(code).To(Equal(1))
		Expect(errOut).To(ContainSubstring(`log.format "xml": want text or json`))
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
