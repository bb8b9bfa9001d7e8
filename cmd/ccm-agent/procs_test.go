package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	"github.com/onsi/gomega/gexec"
)

// pidIn waits (bounded) for a pid file written by a test command.
func pidIn(file string) int {
	GinkgoHelper()
	var pid int
	Eventually(func() error {
		b, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err
	}).WithTimeout(20 * time.Second).WithPolling(20 * time.Millisecond).Should(Succeed())
	return pid
}

// processRunning reports whether pid is a live process (not a zombie).
func processRunning(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i > 0 && i+2 < len(b) && b[i+2] != 'Z'
}

// killPidFilesAfter kills, when the spec ends, the sleep or sh processes
// named in files, so a failing spec leaves nothing running.
func killPidFilesAfter(files ...string) {
	DeferCleanup(func() {
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil || pid <= 1 {
				continue
			}
			cmd, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
			if strings.Contains(string(cmd), "sleep") || strings.HasPrefix(string(cmd), "/bin/sh") {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
}

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
		killPidFilesAfter(sleeper, shell)
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
		pid := pidIn(sleeper)
		Eventually(processRunning).WithArguments(pid).WithTimeout(10*time.Second).Should(BeFalse(), "the setsid sleeper outlived the timeout")
	})

	It("kills what an agent killed with SIGKILL left running, at the next start", func() {
		s, err := gexec.Start(exec.Command(bin, "ensure", "exec", command()), GinkgoWriter, GinkgoWriter)
		Expect(err).ToNot(HaveOccurred())
		sh, pid := pidIn(shell), pidIn(sleeper)
		s.Kill()
		Eventually(s).WithTimeout(20 * time.Second).Should(gexec.Exit())

		// The direct child dies with the agent (parent-death signal); the
		// setsid sleeper is left over.
		Eventually(processRunning).WithArguments(sh).WithTimeout(10*time.Second).Should(BeFalse(), "the command's shell outlived the agent")
		Expect(processRunning(pid)).To(BeTrue(), "the sleeper should be left over for this test to mean anything")

		next, err := gexec.Start(exec.Command(bin, "ensure", "exec", "/bin/true"), GinkgoWriter, GinkgoWriter)
		Expect(err).ToNot(HaveOccurred())
		Eventually(next).WithTimeout(60 * time.Second).Should(gexec.Exit(0))
		Eventually(processRunning).WithArguments(pid).WithTimeout(10*time.Second).Should(BeFalse(), "the next agent did not kill the leftover sleeper")
	})
})
