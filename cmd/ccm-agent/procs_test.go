package main

import (
	"github.com/ccm-fleet/ccm/internal/proctest"
	"os/exec"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	"github.com/onsi/gomega/gexec"
)

var _ = Describe("ccm-agent commands' processes", Ordered, func() {
	var bin, dir, sleeper, shell string
	BeforeAll(func() {
		var err error
		bin, err = gexec.Build("github.com/ccm-fleet/ccm/cmd/ccm-agent")
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(gexec.CleanupBuildArtifacts)
	})
	BeforeEach(func() {
		dir = GinkgoT().TempDir()
		sleeper = filepath.Join(dir, "sleeper.pid")
		shell = filepath.Join(dir, "shell.pid")
		proctest.KillAfter(sleeper, shell)
	})
	// command is an exec resource whose shell starts a setsid sleeper and
	// then waits.
	command := func() string {
		return "/bin/sh -c 'echo $$ > " + shell + "; setsid sleep 300 & echo $! > " + sleeper + "; exec sleep 300'"
	}

	It("leaves no process of a timed-out exec running", func() {
		s, err := gexec.Start(exec.Command(bin, "ensure", "exec", command(), "--timeout", "1s"), GinkgoWriter, GinkgoWriter)
		Expect(err).ToNot(HaveOccurred())
		Eventually(s).WithTimeout(60 * time.Second).Should(gexec.Exit(2))
		Expect(s.Out).To(gbytes.Say("timed out"))
		pid := proctest.PidIn(sleeper)
		Eventually(proctest.Running).WithArguments(pid).WithTimeout(10*time.Second).Should(BeFalse(), "the setsid sleeper outlived the timeout")
	})

	It("kills what an agent killed with SIGKILL left running, at the next start", func() {
		s, err := gexec.Start(exec.Command(bin, "ensure", "exec", command()), GinkgoWriter, GinkgoWriter)
		Expect(err).ToNot(HaveOccurred())
		sh, pid := proctest.PidIn(shell), proctest.PidIn(sleeper)
		s.Kill()
		Eventually(s).WithTimeout(20 * time.Second).Should(gexec.Exit())

		// The direct child dies with the agent (parent-death signal); the
		// setsid sleeper is left over.
		Eventually(proctest.Running).WithArguments(sh).WithTimeout(10*time.Second).Should(BeFalse(), "the command's shell outlived the agent")
		Expect(proctest.Running(pid)).To(BeTrue(), "the sleeper should be left over for this test to mean anything")

		next, err := gexec.Start(exec.Command(bin, "ensure", "exec", "/bin/true"), GinkgoWriter, GinkgoWriter)
		Expect(err).ToNot(HaveOccurred())
		Eventually(next).WithTimeout(60 * time.Second).Should(gexec.Exit(0))
		Eventually(proctest.Running).WithArguments(pid).WithTimeout(10*time.Second).Should(BeFalse(), "the next agent did not kill the leftover sleeper")
	})
})
