package execposix_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/providers/runner"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/exectype"
)

// processGone reports whether pid no longer runs: kill -0 fails, or it is a
// zombie. The zombie case matters where PID 1 does not reap orphans (as in
// this VM's init): a killed orphan then stays a zombie, dead but still
// answering kill -0.
func processGone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// The state follows the parenthesised command name.
	rest := stat[bytes.LastIndexByte(stat, ')')+1:]
	state := strings.Fields(string(rest))[0]
	return state == "Z" || state == "X"
}

var _ = Describe("Real processes", func() {
	var (
		ctx   context.Context
		dir   string
		posix exectype.Provider
		shell exectype.Provider
	)

	BeforeEach(func() {
		ctx = context.Background()
		dir = GinkgoT().TempDir()
		posix = provider(posixFactory())
		shell = provider(shellFactory())
	})

	apply := func(p *exectype.Properties, prov exectype.Provider, ac *resources.ApplyContext) (*resources.Outcome, *protocol.ExecState, error) {
		out, err := exectype.Type{}.Apply(ctx, ac, p, prov)
		if out == nil {
			return nil, nil, err
		}
		return out, out.State.(*protocol.ExecState), err
	}

	It("runs a command with creates once, then is stable", func() {
		flag := filepath.Join(dir, "flag")
		count := filepath.Join(dir, "count")
		p := newProps(fmt.Sprintf("/bin/sh -c 'echo run >> %s && /bin/touch %s'", count, flag),
			func(p *exectype.Properties) { p.Creates = flag })

		out, st, err := apply(p, posix, &resources.ApplyContext{})
		Expect(err).NotTo(HaveOccurred())
		Expect(out.Changed).To(BeTrue())
		Expect(st.ExitCode).To(HaveValue(Equal(0)))
		Expect(st.CreatesSatisfied).To(BeTrue())
		Expect(flag).To(BeAnExistingFile())

		out, st, err = apply(p, posix, &resources.ApplyContext{})
		Expect(err).NotTo(HaveOccurred())
		Expect(out.Changed).To(BeFalse())
		Expect(st.ExitCode).To(BeNil())
		Expect(st.CreatesSatisfied).To(BeTrue())
		Expect(os.ReadFile(count)).To(Equal([]byte("run\n")))
	})

	It("runs /bin/touch with creates and is stable afterwards", func() {
		flag := filepath.Join(dir, "flag")
		p := newProps("/bin/touch "+flag, func(p *exectype.Properties) { p.Creates = flag })
		out, _, err := apply(p, posix, &resources.ApplyContext{})
		Expect(err).NotTo(HaveOccurred())
		Expect(out.Changed).To(BeTrue())
		Expect(flag).To(BeAnExistingFile())

		out, _, err = apply(p, posix, &resources.ApplyContext{Noop: true})
		Expect(err).NotTo(HaveOccurred())
		Expect(out.Changed).To(BeFalse())
		Expect(out.NoopMessage).To(BeEmpty())
	})

	DescribeTable("validates the exit code against returns",
		func(command string, returns []int, wantErr string) {
			p := newProps(command, func(p *exectype.Properties) { p.Returns = returns })
			_, st, err := apply(p, shell, &resources.ApplyContext{})
			if wantErr == "" {
				Expect(err).NotTo(HaveOccurred())
				return
			}
			Expect(err).To(MatchError(resources.ErrDesiredStateFailed))
			Expect(err).To(MatchError(ContainSubstring(wantErr)))
			Expect(st.ExitCode).NotTo(BeNil())
		},
		Entry("/bin/false fails by default", "/bin/false", nil, "exit code 1 is not one of [0]"),
		Entry("/bin/false succeeds when 1 is returned", "/bin/false", []int{0, 1}, ""),
		Entry("exit 3 quotes stderr", "echo 'config broken' >&2; exit 3", []int{0, 1, 2}, "exit code 3 is not one of [0 1 2]: config broken"),
		Entry("exit 2 is accepted when listed", "exit 2", []int{0, 1, 2}, ""),
	)

	It("runs in cwd", func() {
		want, err := filepath.EvalSymlinks(dir)
		Expect(err).NotTo(HaveOccurred())
		p := newProps("/bin/pwd", func(p *exectype.Properties) { p.Cwd = dir; p.LogOutput = true })
		_, st, err := apply(p, posix, &resources.ApplyContext{})
		Expect(err).NotTo(HaveOccurred())
		Expect(st.Metadata.Output).To(Equal(want + "\n"))
	})

	It("adds environment to the child's environment", func() {
		p := newProps("/usr/bin/printenv CCM_EXEC_TEST", func(p *exectype.Properties) {
			p.Environment = []string{"CCM_EXEC_TEST=hello world"}
			p.LogOutput = true
		})
		_, st, err := apply(p, posix, &resources.ApplyContext{})
		Expect(err).NotTo(HaveOccurred())
		Expect(st.Metadata.Output).To(Equal("hello world\n"))

		p = newProps(`echo "$CCM_EXEC_TEST and HOME is set: ${HOME:+yes}"`, func(p *exectype.Properties) {
			p.Environment = []string{"CCM_EXEC_TEST=from shell", "HOME=/root"}
			p.LogOutput = true
		})
		_, st, err = apply(p, shell, &resources.ApplyContext{})
		Expect(err).NotTo(HaveOccurred())
		Expect(st.Metadata.Output).To(Equal("from shell and HOME is set: yes\n"))
	})

	It("finds executables in path", func() {
		bin := filepath.Join(dir, "bin")
		Expect(os.Mkdir(bin, 0o755)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(bin, "ccm-hello"), []byte("#!/bin/sh\necho \"hello from $PATH\"\n"), 0o755)).To(Succeed())

		p := newProps("ccm-hello", func(p *exectype.Properties) { p.Path = bin; p.LogOutput = true })
		_, st, err := apply(p, posix, &resources.ApplyContext{})
		Expect(err).NotTo(HaveOccurred())
		Expect(st.Metadata.Output).To(Equal("hello from " + bin + "\n"))

		p = newProps("touch "+filepath.Join(dir, "touched"), func(p *exectype.Properties) { p.Path = "/usr/bin:/bin" })
		_, _, err = apply(p, posix, &resources.ApplyContext{})
		Expect(err).NotTo(HaveOccurred())
		Expect(filepath.Join(dir, "touched")).To(BeAnExistingFile())
	})

	It("fails when the executable is not in path", func() {
		p := newProps("ccm-hello", func(p *exectype.Properties) { p.Path = dir })
		out, _, err := apply(p, posix, &resources.ApplyContext{})
		Expect(err).To(MatchError(runner.ErrNotFound))
		Expect(err).To(MatchError(resources.ErrDesiredStateFailed))
		Expect(out.Changed).To(BeFalse())
	})

	It("gives the shell pipes and redirections", func() {
		target := filepath.Join(dir, "out")
		p := newProps(fmt.Sprintf("echo hello world | tr a-z A-Z > %s && cat < %s", target, target),
			func(p *exectype.Properties) { p.LogOutput = true })
		_, st, err := apply(p, shell, &resources.ApplyContext{})
		Expect(err).NotTo(HaveOccurred())
		Expect(os.ReadFile(target)).To(Equal([]byte("HELLO WORLD\n")))
		Expect(st.Metadata.Output).To(Equal("HELLO WORLD\n"))
	})

	It("does not expand variables or pipes with posix", func() {
		p := newProps("/bin/echo $HOME | tr a b > x", func(p *exectype.Properties) {
			p.Environment = []string{"HOME=/root"}
			p.LogOutput = true
		})
		_, st, err := apply(p, posix, &resources.ApplyContext{})
		Expect(err).NotTo(HaveOccurred())
		Expect(st.Metadata.Output).To(Equal("$HOME | tr a b > x\n"))
	})

	It("bounds the output it keeps", func() {
		p := newProps("head -c 200000 /dev/zero | tr '\\0' a", func(p *exectype.Properties) { p.LogOutput = true })
		_, st, err := apply(p, shell, &resources.ApplyContext{})
		Expect(err).NotTo(HaveOccurred())
		Expect(st.Metadata.Output).To(Equal(strings.Repeat("a", exectype.MaxOutput)))
	})

	DescribeTable("kills the whole process group on timeout",
		func(useShell bool) {
			pidFile := filepath.Join(dir, "child.pid")
			script := fmt.Sprintf("/bin/sleep 300 & echo $! > %s; wait", pidFile)
			command, prov := "/bin/sh -c '"+script+"'", posix
			if useShell {
				command, prov = script, shell
			}
			p := newProps(command, func(p *exectype.Properties) { p.Timeout = "1s" })

			_, _, err := apply(p, prov, &resources.ApplyContext{})
			Expect(err).To(MatchError(runner.ErrTimeout))
			Expect(err).To(MatchError(resources.ErrDesiredStateFailed))

			raw, err := os.ReadFile(pidFile)
			Expect(err).NotTo(HaveOccurred())
			pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
			Expect(err).NotTo(HaveOccurred())
			Expect(pid).To(BeNumerically(">", 1))
			Eventually(processGone).WithArguments(pid).WithTimeout(10*time.Second).Should(BeTrue(),
				"background child %d outlived the timeout", pid)
		},
		Entry("posix", false),
		Entry("shell", true),
	)

	Describe("guards", func() {
		It("run under noop while the command does not", func() {
			guardRan := filepath.Join(dir, "guard-ran")
			target := filepath.Join(dir, "target")
			p := newProps("/bin/touch "+target, func(p *exectype.Properties) {
				p.OnlyIf = "/bin/touch " + guardRan
			})
			out, _, err := apply(p, posix, &resources.ApplyContext{Noop: true})
			Expect(err).NotTo(HaveOccurred())
			Expect(out.Changed).To(BeTrue())
			Expect(out.NoopMessage).To(Equal("Would have executed"))
			Expect(guardRan).To(BeAnExistingFile())
			Expect(target).NotTo(BeAnExistingFile())
		})

		It("skip the command when onlyif fails", func() {
			target := filepath.Join(dir, "target")
			p := newProps("/bin/touch "+target, func(p *exectype.Properties) { p.OnlyIf = "/bin/false" })
			out, st, err := apply(p, posix, &resources.ApplyContext{})
			Expect(err).NotTo(HaveOccurred())
			Expect(out.Changed).To(BeFalse())
			Expect(st.ExitCode).To(BeNil())
			Expect(target).NotTo(BeAnExistingFile())
		})

		It("skip the command with the shell when unless succeeds, with the resource's cwd", func() {
			Expect(os.WriteFile(filepath.Join(dir, "done"), nil, 0o644)).To(Succeed())
			target := filepath.Join(dir, "target")
			p := newProps("touch "+target, func(p *exectype.Properties) {
				p.Cwd = dir
				p.Unless = "test -f done && true"
			})
			out, _, err := apply(p, shell, &resources.ApplyContext{})
			Expect(err).NotTo(HaveOccurred())
			Expect(out.Changed).To(BeFalse())
			Expect(target).NotTo(BeAnExistingFile())

			Expect(os.Remove(filepath.Join(dir, "done"))).To(Succeed())
			out, _, err = apply(p, shell, &resources.ApplyContext{})
			Expect(err).NotTo(HaveOccurred())
			Expect(out.Changed).To(BeTrue())
			Expect(target).To(BeAnExistingFile())
		})
	})

	Describe("refreshonly", func() {
		It("runs only when a subscribed resource changed", func() {
			target := filepath.Join(dir, "reloaded")
			p := newProps("/bin/touch "+target, func(p *exectype.Properties) {
				p.RefreshOnly = true
				p.Subscribe = []string{"file#/etc/app.conf"}
			})

			out, _, err := apply(p, posix, &resources.ApplyContext{})
			Expect(err).NotTo(HaveOccurred())
			Expect(out.Changed).To(BeFalse())
			Expect(target).NotTo(BeAnExistingFile())

			out, _, err = apply(p, posix, &resources.ApplyContext{Refresh: true, Noop: true})
			Expect(err).NotTo(HaveOccurred())
			Expect(out.Changed).To(BeTrue())
			Expect(out.Refreshed).To(BeTrue())
			Expect(out.NoopMessage).To(Equal("Would have executed via subscribe"))
			Expect(target).NotTo(BeAnExistingFile())

			out, st, err := apply(p, posix, &resources.ApplyContext{Refresh: true})
			Expect(err).NotTo(HaveOccurred())
			Expect(out.Changed).To(BeTrue())
			Expect(out.Refreshed).To(BeTrue())
			Expect(st.ExitCode).To(HaveValue(Equal(0)))
			Expect(target).To(BeAnExistingFile())
		})

		It("runs on refresh even when creates exists", func() {
			flag := existing(dir)
			count := filepath.Join(dir, "count")
			p := newProps(fmt.Sprintf("echo ran >> %s", count), func(p *exectype.Properties) { p.Creates = flag })
			out, _, err := apply(p, shell, &resources.ApplyContext{Refresh: true})
			Expect(err).NotTo(HaveOccurred())
			Expect(out.Refreshed).To(BeTrue())
			Expect(os.ReadFile(count)).To(Equal([]byte("ran\n")))
		})
	})
})
