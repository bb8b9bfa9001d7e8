package runner

import (
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

const (
	// trackInterval is how often an exec's descendants are looked up in
	// /proc while it runs, when it has no cgroup.
	trackInterval = 100 * time.Millisecond
	// maxTracked bounds the descendants remembered for one exec.
	maxTracked = 4096
	// maxKillRounds bounds the stop-and-look rounds that find every
	// descendant before they are killed.
	maxKillRounds = 50
)

// execSeq numbers the execs of this process.
var execSeq atomic.Uint64

// execScope is where one command's processes are followed and killed: its
// cgroup, or else its process group, its descendants seen in /proc and the
// processes carrying its marker.
type execScope struct {
	id  string
	log *slog.Logger
	// cg is nil without cgroups.
	cg *execCgroup
	// guards everything below
	mu sync.Mutex
	// pid and start name the direct child once started.
	pid   int
	start uint64
	// tracked are descendants seen while the command ran.
	tracked map[int]uint64
	// orphans are processes reparented to this process that belonged to
	// this command alone, handed over when it finished.
	orphans map[int]uint64

	// followed is whether the command is among those the process table's
	// follower looks up (it has no cgroup)
	followed bool
}

// newScope prepares the scope of one command; s may be nil (Exec without a
// Supervisor): then there is no cgroup.
func (s *Supervisor) newScope() *execScope {
	instance, log := "default", slog.New(slog.DiscardHandler)
	if s != nil {
		instance, log = s.instance, s.log
	}
	seq := strconv.FormatUint(execSeq.Add(1), 10)
	sc := &execScope{id: instance + "." + ownerTag() + "." + seq, log: log, tracked: map[int]uint64{}}
	if s != nil && s.cg != nil {
		cg, err := s.cg.create(ownerTag() + "." + seq)
		if err != nil {
			s.warnOnce.Do(func() {
				log.Warn("cannot make a cgroup for a command; following its processes through /proc", "error", err)
			})
		} else {
			sc.cg = cg
		}
	}
	return sc
}

// configure marks the command's environment and process attributes: its own
// process group, SIGKILL when the thread that started it dies, and its
// cgroup from the first instruction (clone3 CLONE_INTO_CGROUP).
func (sc *execScope) configure(cmd *exec.Cmd) {
	cmd.Env = append(cmd.Env, MarkerEnv+"="+sc.id)
	attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if sc.cg != nil {
		attr.UseCgroupFD = true
		attr.CgroupFD = int(sc.cg.fd.Fd())
	}
	cmd.SysProcAttr = attr
}

// dropCgroup gives up the cgroup, for a retry when starting into it failed.
func (sc *execScope) dropCgroup() {
	if sc.cg != nil {
		_ = sc.cg.killAndRemove()
		sc.cg = nil
	}
}

// setDirect records the direct child, once.
func (sc *execScope) setDirect(pid int) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.pid != 0 {
		return
	}
	sc.pid = pid
	if st, err := readStat(pid); err == nil {
		sc.start = st.start
	}
}

func (sc *execScope) direct() (int, uint64) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return sc.pid, sc.start
}

// started records the direct child and, without a cgroup, has the process
// table's follower look up its descendants (one /proc scan an interval for
// every command running, however many).
func (sc *execScope) started(pid int) {
	sc.setDirect(pid)
	if sc.cg != nil {
		return
	}
	sc.followed = true
	procs.activate(sc)
}

// track records the command's descendants found in list.
func (sc *execScope) track(list []procStat) {
	members := descendants(list, sc.roots(list, nil))
	sc.mu.Lock()
	defer sc.mu.Unlock()
	for pid, start := range members {
		if len(sc.tracked) >= maxTracked {
			break
		}
		sc.tracked[pid] = start
	}
}

// roots returns the processes known to be the command's: the direct child,
// those followed so far, orphans that can only be its own, its process group
// and, when buf is given, every process whose environment carries the
// marker.
func (sc *execScope) roots(list []procStat, buf []byte) map[int]uint64 {
	roots := procs.soleOrphans(sc)
	sc.mu.Lock()
	pid, start := sc.pid, sc.start
	if pid > 0 {
		roots[pid] = start
	}
	for p, s := range sc.tracked {
		roots[p] = s
	}
	for p, s := range sc.orphans {
		roots[p] = s
	}
	sc.mu.Unlock()
	self := os.Getpid()
	for _, st := range list {
		switch {
		case pid > 0 && st.pgid == pid:
			roots[st.pid] = st.start
		case buf != nil && st.state != 'Z' && (st.ppid == self || st.ppid == 1):
			// A process that left the command's tree was re-parented, to
			// this process (a subreaper) or to init; whatever is below it
			// is found by descending from the roots. So only those need
			// their environment read, not every process of the host.
			if v, ok := environValue(st.pid, MarkerEnv, buf); ok && v == sc.id {
				roots[st.pid] = st.start
			}
		}
	}
	return roots
}

// kill kills every process of the command. It is safe to call more than
// once and from os/exec's cancel goroutine.
func (sc *execScope) kill() { sc.killFrom(nil) }

// killFrom is kill whose first round looks at list, when given, instead of
// listing the processes again: the process table finish has just read.
// Nothing of the command can appear later without a parent in that list.
func (sc *execScope) killFrom(list []procStat) {
	if sc.cg != nil {
		if err := sc.cg.kill(); err == nil {
			return
		}
	}
	if pid, _ := sc.direct(); pid > 0 {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
	buf := make([]byte, maxEnviron)
	stopped := map[int]uint64{}
	for range maxKillRounds {
		if list == nil {
			var err error
			if list, err = listProcs(); err != nil {
				break
			}
		}
		roots := sc.roots(list, buf)
		for pid, start := range stopped {
			roots[pid] = start
		}
		if stopMembers(list, roots, stopped) == 0 {
			break
		}
		list = nil
	}
	killStopped(stopped)
}

// finish stops following the command and kills whatever of it is left:
// background processes do not outlive the command that started them.
func (sc *execScope) finish() {
	var list []procStat
	if sc.followed {
		sc.followed = false
		var err error
		if list, err = procs.scan(); err == nil {
			sc.track(list)
		}
		orphans, stopped := procs.deactivate(sc)
		if stopped != nil {
			<-stopped
		}
		sc.mu.Lock()
		sc.orphans = orphans
		sc.mu.Unlock()
	}
	if sc.cg != nil {
		if err := sc.cg.killAndRemove(); err != nil {
			sc.log.Warn("command cgroup left behind; KillLeftovers removes it later", "error", err)
		}
		return
	}
	sc.killFrom(list)
}

// descendants returns roots (those still running as the same process) and
// every process below them.
func descendants(list []procStat, roots map[int]uint64) map[int]uint64 {
	self := os.Getpid()
	kids := map[int][]procStat{}
	out := map[int]uint64{}
	var queue []int
	for _, st := range list {
		kids[st.ppid] = append(kids[st.ppid], st)
		if start, ok := roots[st.pid]; ok && start == st.start && st.pid != self && st.state != 'Z' {
			out[st.pid] = st.start
			queue = append(queue, st.pid)
		}
	}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		for _, k := range kids[pid] {
			if _, seen := out[k.pid]; seen || k.pid == self || k.state == 'Z' {
				continue
			}
			out[k.pid] = k.start
			queue = append(queue, k.pid)
		}
	}
	return out
}

// stopMembers sends SIGSTOP to roots and their descendants not yet in
// stopped, adding them, and returns how many it newly stopped: a stopped
// process cannot fork, so when a round stops nothing new the set is whole.
func stopMembers(list []procStat, roots map[int]uint64, stopped map[int]uint64) int {
	n := 0
	for pid, start := range descendants(list, roots) {
		if _, ok := stopped[pid]; ok {
			continue
		}
		if signalProc(pid, start, syscall.SIGSTOP) == nil {
			stopped[pid] = start
			n++
		}
	}
	return n
}

// killStopped sends SIGKILL to every stopped process and returns how many
// received it.
func killStopped(stopped map[int]uint64) int {
	n := 0
	for pid, start := range stopped {
		if signalProc(pid, start, syscall.SIGKILL) == nil {
			n++
		}
	}
	return n
}

// waitReaders waits for the output readers, closing the pipes after delay
// when a process that escaped still holds them open.
func waitReaders(wg *sync.WaitGroup, delay time.Duration, pipes ...*os.File) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	t := time.NewTimer(delay)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
	for _, p := range pipes {
		_ = p.Close()
	}
	<-done
}
