package runner_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/providers/runner"
)

var _ = Describe("Exec", func() {
	ctx := context.Background()
	r := runner.Exec{}

	It("runs a command with args, dir and extra environment", func() {
		dir := GinkgoT().TempDir()
		res, err := r.Run(ctx, runner.Command{Path: "/bin/sh", Args: []string{"-c", "pwd; echo $CCM_X; echo oops >&2; exit 3"}, Dir: dir, Env: []string{"CCM_X=hello"}})
		Expect(err).ToNot(HaveOccurred())
		Expect(res.ExitCode).To(Equal(3), "a non-zero exit is a result, not an error")
		Expect(string(res.Stdout)).To(Equal(dir + "\nhello\n"))
		Expect(string(res.Stderr)).To(Equal("oops\n"))
	})

	It("looks commands up in the given search path only", func() {
		res, err := r.Run(ctx, runner.Command{Path: "true", SearchPath: "/bin:/usr/bin"})
		Expect(err).ToNot(HaveOccurred())
		Expect(res.ExitCode).To(Equal(0))

		_, err = r.Run(ctx, runner.Command{Path: "true", SearchPath: GinkgoT().TempDir()})
		Expect(err).To(MatchError(runner.ErrNotFound))
		_, err = r.Run(ctx, runner.Command{Path: "/nonexistent/cmd"})
		Expect(err).To(MatchError(runner.ErrNotFound))
	})

	It("bounds captured output", func() {
		res, err := r.Run(ctx, runner.Command{Path: "/bin/sh", Args: []string{"-c", "head -c 100000 /dev/zero"}, MaxOutput: 1000})
		Expect(err).ToNot(HaveOccurred())
		Expect(res.Stdout).To(HaveLen(1000))
		Expect(res.Truncated).To(BeTrue())
	})

	It("kills the whole process group on timeout", func() {
		dir := GinkgoT().TempDir()
		pidFile := filepath.Join(dir, "child.pid")
		// The shell starts a background child that would outlive it, records
		// its pid, then waits.
		script := "sleep 300 & echo $! > " + pidFile + "; wait"
		res, err := r.Run(ctx, runner.Command{Path: "/bin/sh", Args: []string{"-c", script}, Timeout: 500 * time.Millisecond})
		Expect(err).To(MatchError(runner.ErrTimeout))
		Expect(res).ToNot(BeNil())

		b, rerr := os.ReadFile(pidFile)
		Expect(rerr).ToNot(HaveOccurred())
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		Expect(pid).To(BeNumerically(">", 1))
		Eventually(func() error { return syscall.Kill(pid, 0) }).WithTimeout(5 * time.Second).Should(MatchError(syscall.ESRCH))
	})

	It("stops when the context is cancelled", func() {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		_, err := r.Run(cctx, runner.Command{Path: "/bin/sleep", Args: []string{"10"}})
		Expect(errors.Is(err, context.Canceled)).To(BeTrue())
	})
})

var _ = Describe("Fake", func() {
	ctx := context.Background()

	It("answers scripted calls in order and verifies them", func() {
		f := &runner.Fake{}
		f.Expect([]string{"dpkg-query", "-W", "zsh"}, 0, "zsh 5.9 amd64 installed")
		res, err := f.Run(ctx, runner.Command{Path: "dpkg-query", Args: []string{"-W", "zsh"}})
		Expect(err).ToNot(HaveOccurred())
		Expect(string(res.Stdout)).To(Equal("zsh 5.9 amd64 installed"))
		Expect(f.Verify()).To(Succeed())
		Expect(f.Calls()).To(HaveLen(1))
	})

	It("fails on a different argv, a missing env var, or leftovers", func() {
		f := &runner.Fake{}
		f.Add(runner.Expectation{Argv: []string{"apt-get", "install"}, Env: []string{"DEBIAN_FRONTEND=noninteractive"}})
		_, err := f.Run(ctx, runner.Command{Path: "apt-get", Args: []string{"remove"}})
		Expect(err).To(MatchError(ContainSubstring("unexpected command")))
		_, err = f.Run(ctx, runner.Command{Path: "apt-get", Args: []string{"install"}})
		Expect(err).To(MatchError(ContainSubstring("environment lacks DEBIAN_FRONTEND=noninteractive")))
		Expect(f.Verify()).To(MatchError(ContainSubstring("was not run")))
	})
})
