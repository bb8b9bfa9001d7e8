package apt

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ccm-fleet/ccm/providers/runner"
)

// DefaultLockTimeout is how long apt-get waits for the dpkg lock when the
// factory is given no other time: long enough for the apt-get of a
// neighbour or a daily unattended-upgrades run to finish, short enough that
// a request does not hang behind a stuck one.
const DefaultLockTimeout = 2 * time.Minute

// MaxLockTimeout bounds the lock wait a factory accepts.
const MaxLockTimeout = time.Hour

// DpkgLocks are the locks apt-get takes before it changes anything, in the
// order it takes them: dpkg's frontend lock, then dpkg's own. Both are
// fcntl write locks on the whole file.
func DpkgLocks() []string {
	return []string{"/var/lib/dpkg/lock-frontend", "/var/lib/dpkg/lock"}
}

// lockMargin is kept between apt-get giving up on the lock and the
// request's deadline, so that apt-get's own answer, naming the holder,
// arrives before the runner kills it.
const lockMargin = time.Second

// holder is a process holding one of dpkg's locks.
type holder struct {
	// lock is the lock file.
	lock string
	// pid is 0 when the holder is not visible from here (another PID
	// namespace, an open file description lock).
	pid int
	// command is the holder's /proc/PID/comm, "" when unknown.
	command string
}

func (h holder) String() string {
	switch {
	case h.pid <= 0:
		return "another process"
	case h.command == "":
		return "process " + strconv.Itoa(h.pid)
	default:
		return fmt.Sprintf("process %d (%s)", h.pid, h.command)
	}
}

// findHolder asks the kernel (F_GETLK) whether another process holds a
// lock on one of paths that would keep apt-get from taking it, and who. A
// file that does not exist or cannot be opened is not held.
func findHolder(paths []string) (holder, bool) {
	for _, path := range paths {
		if h, ok := lockHolder(path); ok {
			return h, true
		}
	}
	return holder{}, false
}

func lockHolder(path string) (holder, bool) {
	f, err := os.Open(path)
	if err != nil {
		return holder{}, false
	}
	defer f.Close()
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: 0, Len: 0}
	if err := unix.FcntlFlock(f.Fd(), unix.F_GETLK, &lk); err != nil || lk.Type == unix.F_UNLCK {
		return holder{}, false
	}
	h := holder{lock: path, pid: int(lk.Pid)}
	if h.pid > 0 {
		h.command = processName(h.pid)
	}
	return h, true
}

// processName is /proc/PID/comm without its newline, "" when unreadable.
func processName(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// lockSeconds is the DPkg::Lock::Timeout apt-get runs with: the
// provider's lock timeout, shortened so that apt-get gives up a margin
// before ctx's deadline; whole seconds, at least 0 (no wait).
func lockSeconds(ctx context.Context, timeout time.Duration) int {
	if deadline, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(deadline)-lockMargin)
	}
	return max(int(timeout/time.Second), 0)
}

// apt's English messages about a lock it could not get. While it waits it
// prints "Waiting for cache lock: Could not get lock PATH. It is held by
// process PID (COMM)..." on stdout; when it gives up, "E: Could not get
// lock PATH. It is held by ..." (no wait) or "E: Unable to acquire the dpkg
// frontend lock (PATH), is another process using it?" on stderr.
var (
	heldByRE      = regexp.MustCompile(`Could not get lock (/\S+?)\.? It is held by process (\d+)(?: \(([^)\n]*)\))?`)
	lockFailureRE = regexp.MustCompile(`(?m)^E: (?:Could not get lock (/\S+?)\.?(?:\s|$)|Unable to acquire the dpkg frontend lock \(([^)\n]+)\)|Unable to lock the administration directory \(([^)\n]+)\))`)
	waitingRE     = regexp.MustCompile(`Waiting for cache lock`)
)

// lastHolder is the last holder apt named in out.
func lastHolder(out []byte) (holder, bool) {
	all := heldByRE.FindAllSubmatch(out, -1)
	if len(all) == 0 {
		return holder{}, false
	}
	m := all[len(all)-1]
	pid, _ := strconv.Atoi(string(m[2]))
	return holder{lock: string(m[1]), pid: pid, command: string(m[3])}, true
}

// lockFailure reads an apt-get that exited non-zero: when it gave up on a
// dpkg lock it returns the lock and its holder, as apt named them, else as
// the kernel reports them now, else as seen before apt-get ran (before).
func lockFailure(res *runner.Result, before *holder, paths []string) (holder, bool) {
	m := lockFailureRE.FindSubmatch(res.Stderr)
	if m == nil {
		return holder{}, false
	}
	lock := ""
	for _, g := range m[1:] {
		if len(g) > 0 {
			lock = string(g)
			break
		}
	}
	out := append(append([]byte(nil), res.Stdout...), res.Stderr...)
	if h, ok := lastHolder(out); ok {
		return h, true
	}
	if h, ok := findHolder(paths); ok {
		return h, true
	}
	if before != nil {
		return *before, true
	}
	return holder{lock: lock}, true
}

// ErrLocked is wrapped by the error of an install or removal that did not
// run because another process held the dpkg lock for longer than the
// provider waits (see LockedError).
var ErrLocked = errors.New("dpkg lock held by another process")

// LockedError is the error of an apt-get that gave up waiting for the dpkg
// lock; apt-get changed nothing. errors.Is(err, ErrLocked) is true, and it
// unwraps to the command's failure (pkgtype.ErrCommandFailed).
type LockedError struct {
	// Package is the package the command was for.
	Package string
	// Lock is the lock file, "" when apt did not say.
	Lock string
	// PID and Command name the holder; PID is 0 when it is unknown.
	PID     int
	Command string
	// Waited is how long apt-get was told to wait (DPkg::Lock::Timeout).
	Waited time.Duration
	// Err is the command's failure.
	Err error
}

func (e *LockedError) Error() string {
	lock := "dpkg lock"
	if e.Lock != "" {
		lock += " " + e.Lock
	}
	h := holder{pid: e.PID, command: e.Command}
	if e.Waited < time.Second {
		return fmt.Sprintf("package %s: %s held by %s, and the request's deadline left no time to wait for it, so apt-get changed nothing: %v",
			e.Package, lock, h, e.Err)
	}
	return fmt.Sprintf("package %s: %s held by %s for longer than %s, so apt-get changed nothing: %v",
		e.Package, lock, h, e.Waited, e.Err)
}

// Is reports target == ErrLocked.
func (e *LockedError) Is(target error) bool { return target == ErrLocked }

// Unwrap returns the command's failure.
func (e *LockedError) Unwrap() error { return e.Err }
