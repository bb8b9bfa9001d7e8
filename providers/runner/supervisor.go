package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// MarkerEnv is the environment variable set on every command the runner
// starts, and inherited by its descendants, naming the exec:
// <instance>.<agent pid>.<agent start time>.<sequence>.
const MarkerEnv = "CCM_EXEC_ID"

// Mechanism names how a Supervisor contains the processes of an exec.
type Mechanism string

const (
	// MechanismCgroup puts every exec in its own cgroup v2 and kills it
	// with cgroup.kill: nothing started inside can leave.
	MechanismCgroup Mechanism = "cgroup2"
	// MechanismSubreaper follows each exec's descendants through /proc
	// (parent links, process group, marker environment) with this process
	// as child subreaper, so orphans reparent to it instead of init.
	MechanismSubreaper Mechanism = "subreaper"
)

var instanceRe = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// SupervisorOptions configures NewSupervisor.
type SupervisorOptions struct {
	// Instance names this agent's execs (letters, digits, '-' and '_'; at
	// most 64). KillLeftovers only touches execs of the same instance. Empty
	// means "default".
	Instance string
	// Log receives the choice of mechanism and cleanup problems; nil
	// discards.
	Log *slog.Logger
	// NoCgroup forces MechanismSubreaper even where cgroups work.
	NoCgroup bool
}

// Supervisor contains the processes that an Exec holding it starts: on
// timeout, cancel or normal end of a command every descendant is killed,
// including ones that called setsid or double-forked. Create one per
// process with NewSupervisor, hand it to Exec, and Close it when no command
// runs any more.
type Supervisor struct {
	instance string
	log      *slog.Logger
	// cg is nil when cgroups are not used.
	cg *cgroupParent

	// guards closed
	mu     sync.Mutex
	closed bool
	// warnOnce logs the first failure to use the cgroup of an exec.
	warnOnce sync.Once
}

// NewSupervisor makes this process a child subreaper, starts reaping
// orphans reparented to it, and chooses the mechanism: a cgroup per exec
// where cgroup v2 with cgroup.kill is mounted and a child cgroup can be made
// below this process's own, otherwise MechanismSubreaper (logged once).
func NewSupervisor(opts SupervisorOptions) (*Supervisor, error) {
	if opts.Instance == "" {
		opts.Instance = "default"
	}
	if !instanceRe.MatchString(opts.Instance) {
		return nil, fmt.Errorf("supervisor instance %q: use 1 to 64 letters, digits, '-' or '_'", opts.Instance)
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s := &Supervisor{instance: opts.Instance, log: log}
	if err := procs.acquire(log); err != nil {
		return nil, fmt.Errorf("child subreaper: %w", err)
	}
	if !opts.NoCgroup {
		cg, err := newCgroupParent(opts.Instance)
		if err != nil {
			log.Warn("cannot contain commands in cgroups; following their processes through /proc instead", "error", err)
		} else {
			s.cg = cg
		}
	}
	log.Debug("command supervisor ready", "mechanism", s.Mechanism(), "instance", s.instance)
	return s, nil
}

// Mechanism returns how this supervisor contains commands.
func (s *Supervisor) Mechanism() Mechanism {
	if s.cg != nil {
		return MechanismCgroup
	}
	return MechanismSubreaper
}

// Close stops reaping orphans (for the last supervisor of the process, which
// then stops being a subreaper) and removes the parent cgroup when it is
// empty. Commands must not be running through this supervisor any more.
func (s *Supervisor) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	procs.release()
	if s.cg != nil {
		_ = os.Remove(s.cg.dir) // fails while another supervisor uses it
	}
	return nil
}

// Leftovers is what KillLeftovers cleaned up.
type Leftovers struct {
	// Processes is how many processes carrying a dead agent's marker, or
	// descending from one, were killed.
	Processes int
	// Cgroups is how many exec cgroups of a dead agent were killed and
	// removed.
	Cgroups int
}

// KillLeftovers kills what commands of an earlier agent process of the same
// instance left running when that agent died mid-command (kill -9, crash):
// every process still in one of its exec cgroups, and every process of this
// PID namespace whose environment carries its marker (MarkerEnv), with their
// descendants. The commands of an agent in another PID namespace (a
// container) are never touched: their markers name pids of that namespace.
// Commands of agents of this instance that are still alive, and every
// process without the marker, are never touched. Call it once at start,
// before commands run. The error joins what could not be cleaned; Leftovers
// counts what was.
func (s *Supervisor) KillLeftovers(ctx context.Context) (Leftovers, error) {
	var out Leftovers
	var errs []error
	if s.cg != nil {
		n, err := s.cg.leftovers()
		out.Cgroups = n
		if err != nil {
			errs = append(errs, err)
		}
	}
	n, err := killMarked(ctx, func(marker string) bool {
		inst, owner, ok := strings.Cut(marker, ".")
		return ok && inst == s.instance && ownerGone(owner)
	})
	out.Processes = n
	if err != nil {
		errs = append(errs, err)
	}
	if out.Processes > 0 || out.Cgroups > 0 {
		s.log.Warn("killed processes left running by an earlier agent", "processes", out.Processes, "cgroups", out.Cgroups)
	}
	return out, errors.Join(errs...)
}

// killMarked stops, then kills, every process whose marker matches and all
// their descendants, and returns how many it killed.
func killMarked(ctx context.Context, match func(marker string) bool) (int, error) {
	self := os.Getpid()
	buf := make([]byte, maxEnviron)
	stopped := map[int]uint64{}
	for range maxKillRounds {
		if err := ctx.Err(); err != nil {
			return killStopped(stopped), err
		}
		list, err := listProcs()
		if err != nil {
			return killStopped(stopped), err
		}
		roots := map[int]uint64{}
		for _, st := range list {
			if st.pid == self || st.state == 'Z' {
				continue
			}
			if _, done := stopped[st.pid]; done {
				continue
			}
			// A marker names its agent by a pid of the agent's own PID
			// namespace: only this namespace's markers can be judged.
			if v, ok := environValue(st.pid, MarkerEnv, buf); ok && match(v) && samePIDNamespace(st.pid) {
				roots[st.pid] = st.start
			}
		}
		for pid, start := range stopped {
			roots[pid] = start
		}
		if stopMembers(list, roots, stopped) == 0 {
			break
		}
	}
	return killStopped(stopped), nil
}

// ownerTag names this process: "<pid>.<start time>".
var ownerTag = sync.OnceValue(func() string {
	pid := os.Getpid()
	st, err := readStat(pid)
	if err != nil {
		return strconv.Itoa(pid) + ".0"
	}
	return strconv.Itoa(pid) + "." + strconv.FormatUint(st.start, 10)
})

// ownerGone reports whether the agent named by "<pid>.<start>[.<rest>]" is
// no longer running. A name that does not parse is never considered gone.
func ownerGone(name string) bool {
	f := strings.SplitN(name, ".", 3)
	if len(f) < 2 {
		return false
	}
	pid, err1 := strconv.Atoi(f[0])
	start, err2 := strconv.ParseUint(f[1], 10, 64)
	if err1 != nil || err2 != nil || pid <= 0 {
		return false
	}
	st, err := readStat(pid)
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
		return true
	}
	return err == nil && (st.start != start || st.state == 'Z')
}
