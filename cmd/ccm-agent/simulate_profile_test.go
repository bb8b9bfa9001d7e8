package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	"github.com/onsi/gomega/gexec"

	"github.com/ccm-fleet/ccm/broker"
	"github.com/ccm-fleet/ccm/broker/brokertest"
)

var _ = Describe("ccm-agent simulate --memprofile", func() {
	It("writes the heap profile and the goroutine count when asked to stop, while every agent still serves", func() {
		bin, err := gexec.Build("github.com/ccm-fleet/ccm/cmd/ccm-agent")
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(gexec.CleanupBuildArtifacts)
		addr := freeAddr()
		brokertest.StartConfig(GinkgoT(), broker.Config{Listen: addr})
		dir := GinkgoT().TempDir()
		profile := filepath.Join(dir, "agents.heap")
		cmd := exec.Command(bin, "simulate", "--count", "3", "--insecure", "--state-dir", dir, "-s", "nats://"+addr,
			"--memprofile", profile, "--log-level", "info")
		cmd.Env = append(cmd.Environ(), "XDG_CONFIG_HOME="+dir, "HOME="+dir)
		s, err := gexec.Start(cmd, GinkgoWriter, GinkgoWriter)
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(func() { s.Kill().Wait(20 * time.Second) })
		Eventually(s.Err).WithTimeout(60 * time.Second).Should(gbytes.Say(`3 simulated agents serving`))
		Expect(profile).ToNot(BeAnExistingFile(), "written on the way out, not before")

		s.Signal(syscall.SIGTERM)
		Eventually(s).WithTimeout(60 * time.Second).Should(gexec.Exit(0))
		Expect(s.Err).To(gbytes.Say(`heap profile written" file=` + profile + ` goroutines=\d+ heap_inuse_before_gc=\d+ stack_inuse=\d+`))
		data, err := os.ReadFile(profile)
		Expect(err).ToNot(HaveOccurred())
		Expect(string(data)).To(HavePrefix("heap profile: "))
		Expect(string(data)).To(ContainSubstring("agent.New"), "the agents' allocations are in it")
		Expect(string(data)).To(ContainSubstring("# runtime.MemStats"))
	})
})
