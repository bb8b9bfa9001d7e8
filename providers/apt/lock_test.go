package apt_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/providers/apt"
	"github.com/ccm-fleet/ccm/providers/runner"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/pkgtype"
)

// argvRunner keeps every command's argv and answers it with exit 0,
// dpkg-query with the test package installed.
type argvRunner struct {
	mu    sync.Mutex
	calls [][]string
}

func (r *argvRunner) Run(_ context.Context, c runner.Command) (*runner.Result, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, c.Argv())
	if c.Path == "dpkg-query" {
		return &runner.Result{Stdout: []byte("ccm-fleet-testpkg 2.0-1 amd64 installed\n")}, nil
	}
	return &runner.Result{}, nil
}

// lockTimeoutArg is the DPkg::Lock::Timeout value of the last command, -1
// when it has none.
func (r *argvRunner) lockTimeoutArg() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, a := range r.calls[len(r.calls)-1] {
		if v, ok := strings.CutPrefix(a, "DPkg::Lock::Timeout="); ok {
			n, err := strconv.Atoi(v)
			Expect(err).NotTo(HaveOccurred())
			return n
		}
	}
	return -1
}

// logTo returns ctx carrying a logger that writes into buf, as the engine
// gives a provider the resource's logger.
func logTo(ctx context.Context, buf *bytes.Buffer) context.Context {
	return resources.WithLogger(ctx, slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
}

var _ = Describe("Waiting for the dpkg lock", func() {
	var (
		fake *runner.Fake
		prov *apt.Provider
	)

	BeforeEach(func() {
		fake = &runner.Fake{}
		prov = newProvider(fake)
	})

	DescribeTable("an apt-get that gave up on the lock fails with ErrLocked naming the holder apt named",
		func(ctx context.Context, stdoutFile, stderrFile, want string) {
			expectResolved(fake)
			expect(fake, installArgv("--", "ccm-fleet-testpkg"), 100, stdoutFile, stderrFile)
			err := prov.Install(ctx, "ccm-fleet-testpkg", "present")
			Expect(err).To(MatchError(apt.ErrLocked))
			Expect(err).To(MatchError(pkgtype.ErrCommandFailed), "still the command's failure")
			Expect(err).To(MatchError(ContainSubstring(want)))
			Expect(err).To(MatchError(HavePrefix("package ccm-fleet-testpkg: ")))
			Expect(fake.Verify()).To(Succeed())
		},
		Entry("after waiting DPkg::Lock::Timeout (the holder is on stdout)",
			"apt_get_lock_timeout_stdout.txt", "apt_get_lock_timeout_stderr.txt",
			"dpkg lock /var/lib/dpkg/lock-frontend held by process 2984 (python3) for longer than 2m0s, so apt-get changed nothing"),
		Entry("without a wait (the holder is on stderr)",
			"", "apt_get_lock_held_stderr.txt",
			"dpkg lock /var/lib/dpkg/lock-frontend held by process 48213 (apt-get) for longer than 2m0s"),
	)

	It("says so for a removal too", func(ctx context.Context) {
		expect(fake, statusArgv("ccm-fleet-testpkg"), 0, "dpkg_query_testpkg_2.0-1.txt", "")
		expect(fake, removeArgv("ccm-fleet-testpkg"), 100, "apt_get_lock_timeout_stdout.txt", "apt_get_lock_timeout_stderr.txt")
		err := prov.Uninstall(ctx, "ccm-fleet-testpkg")
		Expect(err).To(MatchError(apt.ErrLocked))
		var le *apt.LockedError
		Expect(errors.As(err, &le)).To(BeTrue())
		Expect([]any{le.Package, le.Lock, le.PID, le.Command, le.Waited}).To(Equal([]any{
			"ccm-fleet-testpkg", "/var/lib/dpkg/lock-frontend", 2984, "python3", 2 * time.Minute,
		}))
	})

	It("is not claimed for other failures", func(ctx context.Context) {
		expectResolved(fake)
		expect(fake, installArgv("--", "ccm-fleet-testpkg"), 100,
			"apt_get_install_unknown_stdout.txt", "apt_get_install_unknown_stderr.txt")
		err := prov.Install(ctx, "ccm-fleet-testpkg", "present")
		Expect(err).To(MatchError(pkgtype.ErrCommandFailed))
		Expect(err).NotTo(MatchError(apt.ErrLocked))
	})

	It("logs that apt-get waited when it got the lock in the end", func(ctx context.Context) {
		var logs bytes.Buffer
		expectResolved(fake)
		expect(fake, installArgv("--", "ccm-fleet-testpkg"), 0, "apt_get_install_waited_stdout.txt", "")
		Expect(prov.Install(logTo(ctx, &logs), "ccm-fleet-testpkg", "present")).To(Succeed())
		Expect(logs.String()).To(ContainSubstring(`msg="apt-get waited for the dpkg lock" package=ccm-fleet-testpkg lock=/var/lib/dpkg/lock-frontend holder="process 5931 (python3)" pid=5931`))
	})

	It("logs the holder before apt-get runs when the lock is held then", func(ctx context.Context) {
		lock := filepath.Join(GinkgoT().TempDir(), "lock-frontend")
		h := holdLockInChild(lock)
		apt.SetLockPaths(prov, []string{filepath.Join(GinkgoT().TempDir(), "absent"), lock})
		var logs bytes.Buffer
		expectResolved(fake)
		expect(fake, installArgv("--", "ccm-fleet-testpkg"), 100, "apt_get_lock_timeout_stdout.txt", "apt_get_lock_timeout_stderr.txt")
		err := prov.Install(logTo(ctx, &logs), "ccm-fleet-testpkg", "present")
		Expect(err).To(MatchError(apt.ErrLocked))
		Expect(logs.String()).To(ContainSubstring(`level=INFO msg="waiting for the dpkg lock" package=ccm-fleet-testpkg lock=` + lock + ` holder="` + h.Holds() + `" pid=` + strconv.Itoa(h.PID()) + ` timeout=2m0s`))
	})

	Describe("DPkg::Lock::Timeout", func() {
		var r *argvRunner
		BeforeEach(func() { r = &argvRunner{} })
		uninstall := func(ctx context.Context, opts ...apt.Option) int {
			GinkgoHelper()
			p, err := apt.NewFactory(r, nil, &sync.Mutex{}, opts...).New()
			Expect(err).NotTo(HaveOccurred())
			apt.SetLockPaths(p.(*apt.Provider), nil)
			Expect(p.(*apt.Provider).Uninstall(ctx, "ccm-fleet-testpkg")).To(Succeed())
			return r.lockTimeoutArg()
		}

		It("is the factory's lock timeout in whole seconds, 2m by default, at most an hour", func(ctx context.Context) {
			Expect(apt.NewFactory(nil, nil, nil).LockTimeout()).To(Equal(apt.DefaultLockTimeout))
			Expect(apt.DefaultLockTimeout).To(Equal(2 * time.Minute))
			Expect(apt.NewFactory(nil, nil, nil, apt.WithLockTimeout(0)).LockTimeout()).To(Equal(apt.DefaultLockTimeout))
			Expect(apt.NewFactory(nil, nil, nil, apt.WithLockTimeout(5*time.Hour)).LockTimeout()).To(Equal(time.Hour))
			Expect(apt.NewFactory(nil, nil, nil, apt.WithLockTimeout(5*time.Second)).LockTimeout()).To(Equal(5 * time.Second))
		})

		It("is never longer than the request's deadline allows", func(ctx context.Context) {
			short, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			Expect(uninstall(short)).To(And(BeNumerically(">=", 0), BeNumerically("<", 30)))
			Expect(uninstall(short, apt.WithLockTimeout(5*time.Second))).To(Equal(5))
			spent, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
			defer cancel()
			Expect(uninstall(spent)).To(Equal(0), "no wait at all when less than a second is left")
		})

		It("says when the request's deadline left no time to wait", func(ctx context.Context) {
			spent, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
			defer cancel()
			expect(fake, statusArgv("ccm-fleet-testpkg"), 0, "dpkg_query_testpkg_2.0-1.txt", "")
			fake.Add(runner.Expectation{
				Argv:   []string{"apt-get", "-o", "DPkg::Lock::Timeout=0", "-q", "-y", "-o", "APT::Cmd::Pattern-Only=true", "remove", "--", "ccm-fleet-testpkg"},
				Env:    append(append([]string(nil), aptEnv...), "LC_ALL=C"),
				Result: runner.Result{ExitCode: 100, Stderr: fixture("apt_get_lock_held_stderr.txt")},
			})
			err := prov.Uninstall(spent, "ccm-fleet-testpkg")
			Expect(err).To(MatchError(apt.ErrLocked))
			Expect(err).To(MatchError(ContainSubstring("package ccm-fleet-testpkg: dpkg lock /var/lib/dpkg/lock-frontend held by process 48213 (apt-get), and the request's deadline left no time to wait for it, so apt-get changed nothing")))
		})
	})
})
