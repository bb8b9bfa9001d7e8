package apt_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/providers/apt"
	"github.com/ccm-fleet/ccm/providers/apt/apttest"
	"github.com/ccm-fleet/ccm/providers/runner"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/pkgtype"
)

// lockedBuffer is a bytes.Buffer safe for a writer and a reader at once.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// childSleeping reports whether a child of this process named comm is
// asleep in clock_nanosleep: apt-get, between its tries of a lock it could
// not get (it opens and closes the lock file on each try, and sleeps
// nowhere else before it has the lock).
func childSleeping(comm string) bool {
	procs, _ := filepath.Glob("/proc/[0-9]*")
	me := strconv.Itoa(os.Getpid())
	for _, dir := range procs {
		stat, err := os.ReadFile(filepath.Join(dir, "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so cut at the
		// last parenthesis.
		i := bytes.LastIndexByte(stat, ')')
		fields := strings.Fields(string(stat[i+1:]))
		name, _ := os.ReadFile(filepath.Join(dir, "comm"))
		if len(fields) < 2 || fields[1] != me || strings.TrimSpace(string(name)) != comm {
			continue
		}
		wchan, _ := os.ReadFile(filepath.Join(dir, "wchan"))
		syscall, _ := os.ReadFile(filepath.Join(dir, "syscall"))
		nr, _, _ := strings.Cut(string(syscall), " ")
		if strings.Contains(string(wchan), "nanosleep") || nr == strconv.Itoa(unix.SYS_CLOCK_NANOSLEEP) {
			return true
		}
	}
	return false
}

var _ = Describe("The dpkg lock on this host", Label("real"), func() {
	It("is waited for, up to the lock timeout: apt-get fails naming the holder when it runs out, and installs once the holder lets go", func(sctx SpecContext) {
		reason, ok := apttest.Available()
		Expect(ok).To(BeTrue(), "this spec holds the real dpkg lock and installs a package: "+reason)
		// A bound, not a speed check: apt runs took 50 s each at load 30 on 2 cores.
		ctx, cancel := context.WithTimeout(sctx, 8*time.Minute)
		defer cancel()

		repo, err := apttest.Setup(ctx, GinkgoT())
		Expect(err).NotTo(HaveOccurred())
		testPkg := repo.PackageName()
		dpkgState := func() string {
			GinkgoHelper()
			st, err := repo.DpkgState(ctx)
			Expect(err).NotTo(HaveOccurred())
			return st
		}
		Expect(dpkgState()).To(Equal("unknown"))

		logs := &lockedBuffer{}
		log := slog.New(slog.NewTextHandler(io.MultiWriter(logs, GinkgoWriter), &slog.HandlerOptions{Level: slog.LevelDebug}))
		provider := func(timeout time.Duration) pkgtype.Provider {
			GinkgoHelper()
			p, err := apt.NewFactory(runner.Exec{}, log, &sync.Mutex{}, apt.WithLockTimeout(timeout)).New()
			Expect(err).NotTo(HaveOccurred())
			return p.(pkgtype.Provider)
		}
		present := func(prov pkgtype.Provider) error {
			p := &pkgtype.Properties{}
			p.Name, p.Ensure = testPkg, "present"
			Expect(p.Validate()).To(Succeed())
			_, err := pkgtype.Type{}.Apply(ctx, &resources.ApplyContext{Log: log}, p, prov)
			return err
		}
		frontend := apt.DpkgLocks()[0]

		By("another process holding dpkg's frontend lock")
		holder := holdLockInChild(frontend)

		By("ensure present with a lock timeout of 2s fails naming the holder, and installs nothing")
		err = present(provider(2 * time.Second))
		Expect(err).To(MatchError(apt.ErrLocked))
		Expect(err).To(MatchError(ContainSubstring("package " + testPkg + ": dpkg lock " + frontend + " held by " + holder.Holds() + " for longer than 2s, so apt-get changed nothing")))
		Expect(dpkgState()).To(Equal("unknown"))

		By("the provider said it was waiting, and for whom")
		Expect(logs.String()).To(MatchRegexp(`level=INFO msg="waiting for the dpkg lock" .*package=%s lock=%s holder="%s" pid=%d timeout=2s`,
			regexp.QuoteMeta(testPkg), regexp.QuoteMeta(frontend), regexp.QuoteMeta(holder.Holds()), holder.PID()))

		By("ensure present with a longer lock timeout installs once the holder, still there, lets go")
		done := make(chan error, 1)
		go func() {
			defer GinkgoRecover()
			done <- present(provider(5 * time.Minute))
		}()
		// Let go only once apt-get has found the lock held and sleeps
		// before its next try.
		Eventually(func() bool { return childSleeping("apt-get") }).
			WithContext(ctx).WithTimeout(3*time.Minute).WithPolling(20*time.Millisecond).
			Should(BeTrue(), "apt-get is waiting for the lock")
		Expect(repo.InstalledVersion(ctx)).To(BeEmpty(), "nothing is installed while the lock is held")
		holder.Release()
		Eventually(done).WithContext(ctx).WithTimeout(5 * time.Minute).Should(Receive(BeNil()))
		Expect(dpkgState()).To(Equal("2.0-1 installed"))
	}, NodeTimeout(9*time.Minute))
})
