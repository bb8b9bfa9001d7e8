package runner

import (
	"errors"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// reapInterval is how often orphans are reaped when no SIGCHLD arrived.
const reapInterval = time.Second

// procs is the process-wide bookkeeping every Exec shares: being a child
// subreaper is a property of the whole process, and so is knowing which
// children os/exec will wait for itself.
var procs = &processTable{
	children: map[int]struct{}{},
	active:   map[*execScope]struct{}{},
	orphans:  map[int]*orphan{},
}

type orphan struct {
	start  uint64
	owners map[*execScope]struct{}
}

type processTable struct {
	// start is held for reading while a child is started and registered, and
	// for writing while zombies are reaped, so a direct child that exits at
	// once is never reaped before os/exec can wait for it.
	start sync.RWMutex

	// guards everything below
	mu sync.Mutex
	// children are the pids os/exec started for an Exec and will wait for.
	children map[int]struct{}
	// active are the commands running without a cgroup.
	active map[*execScope]struct{}
	// orphans are live processes reparented to this one (it is a
	// subreaper), each with the commands that were running without a cgroup
	// when it was first seen: it belongs to one of them.
	orphans map[int]*orphan
	// users counts the supervisors that hold the subreaper.
	users int
	// prior is the subreaper setting found before the first user.
	prior int
	stop  chan struct{}
	done  chan struct{}
	// followStop ends the follower, which runs while active is not empty
	// (nil when none runs); followDone is closed when it returned
	followStop, followDone chan struct{}
}

func (t *processTable) register(pid int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.children[pid] = struct{}{}
}

func (t *processTable) unregister(pid int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.children, pid)
}

func (t *processTable) isChild(pid int) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.children[pid]
	return ok
}

// activate adds sc to the commands the follower looks up, starting the
// follower for the first.
func (t *processTable) activate(sc *execScope) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.active[sc] = struct{}{}
	if t.followStop == nil {
		t.followStop, t.followDone = make(chan struct{}), make(chan struct{})
		go t.follow(t.followStop, t.followDone)
	}
}

// follow looks at /proc once every trackInterval for all the commands
// running without a cgroup, until stop is closed.
func (t *processTable) follow(stop, done chan struct{}) {
	defer close(done)
	tick := time.NewTicker(trackInterval)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		list, err := t.scan()
		if err != nil {
			continue
		}
		t.mu.Lock()
		active := make([]*execScope, 0, len(t.active))
		for sc := range t.active {
			active = append(active, sc)
		}
		t.mu.Unlock()
		for _, sc := range active {
			sc.track(list)
		}
	}
}

// scan lists the processes and notes the new orphans among them (see
// attribute), with no child of an Exec between its start and its
// registration: such a child has this process as parent and is not known
// yet, so it would pass for an orphan and be killed with another command.
func (t *processTable) scan() ([]procStat, error) {
	t.start.Lock()
	defer t.start.Unlock()
	list, err := listProcs()
	if err != nil {
		return nil, err
	}
	t.attribute(list)
	return list, nil
}

// attribute notes the orphans in list not seen before, owned by the commands
// running now, and forgets those that ended.
func (t *processTable) attribute(list []procStat) {
	self, group := os.Getpid(), syscall.Getpgrp()
	t.mu.Lock()
	defer t.mu.Unlock()
	live := make(map[int]struct{}, len(t.orphans))
	for _, st := range list {
		if st.ppid != self || st.state == 'Z' || st.pgid == group {
			continue
		}
		if _, ok := t.children[st.pid]; ok {
			continue
		}
		live[st.pid] = struct{}{}
		if o, ok := t.orphans[st.pid]; ok && o.start == st.start {
			continue
		}
		o := &orphan{start: st.start, owners: make(map[*execScope]struct{}, len(t.active))}
		for sc := range t.active {
			o.owners[sc] = struct{}{}
		}
		t.orphans[st.pid] = o
	}
	for pid := range t.orphans {
		if _, ok := live[pid]; !ok {
			delete(t.orphans, pid)
		}
	}
}

// soleOrphans returns the orphans that only sc can own.
func (t *processTable) soleOrphans(sc *execScope) map[int]uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := map[int]uint64{}
	for pid, o := range t.orphans {
		if _, ok := o.owners[sc]; ok && len(o.owners) == 1 {
			out[pid] = o.start
		}
	}
	return out
}

// deactivate ends sc and returns the orphans no running command may own any
// more: they are sc's to kill. When sc was the last command followed it
// stops the follower and returns a channel closed once it returned.
func (t *processTable) deactivate(sc *execScope) (map[int]uint64, <-chan struct{}) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.active, sc)
	var stopped <-chan struct{}
	if len(t.active) == 0 && t.followStop != nil {
		close(t.followStop)
		stopped = t.followDone
		t.followStop, t.followDone = nil, nil
	}
	out := map[int]uint64{}
	for pid, o := range t.orphans {
		if _, ok := o.owners[sc]; !ok {
			continue
		}
		delete(o.owners, sc)
		if len(o.owners) == 0 {
			out[pid] = o.start
			delete(t.orphans, pid)
		}
	}
	return out, stopped
}

// acquire makes this process a child subreaper and starts the goroutine that
// reaps orphans, for the first user; release undoes it for the last.
func (t *processTable) acquire(log *slog.Logger) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.users > 0 {
		t.users++
		return nil
	}
	var prior int32
	if err := unix.Prctl(unix.PR_GET_CHILD_SUBREAPER, uintptr(unsafe.Pointer(&prior)), 0, 0, 0); err != nil {
		return err
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return err
	}
	t.prior = int(prior)
	t.users = 1
	t.stop = make(chan struct{})
	t.done = make(chan struct{})
	go t.reapLoop(log, t.stop, t.done)
	return nil
}

func (t *processTable) release() {
	t.mu.Lock()
	t.users--
	if t.users > 0 {
		t.mu.Unlock()
		return
	}
	stop, done, prior := t.stop, t.done, t.prior
	t.stop, t.done = nil, nil
	t.mu.Unlock()
	close(stop)
	<-done
	_ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, uintptr(prior), 0, 0, 0)
	t.reapOrphans()
}

func (t *processTable) reapLoop(log *slog.Logger, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGCHLD)
	defer signal.Stop(sig)
	tick := time.NewTicker(reapInterval)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-sig:
		case <-tick.C:
		}
		if n := t.reapOrphans(); n > 0 {
			log.Debug("reaped orphaned processes", "count", n)
		}
	}
}

// reapOrphans waits for zombie children of this process that os/exec will
// not wait for: processes reparented here because this process is a
// subreaper. A zombie is reaped only when it is not a registered Exec child
// and not in this process's own process group, so children that other code
// started with os/exec (which stay in the group) keep their exit status.
func (t *processTable) reapOrphans() int {
	if !anyExited() {
		return 0
	}
	t.start.Lock()
	defer t.start.Unlock()
	self, group := os.Getpid(), syscall.Getpgrp()
	list, err := listProcs()
	if err != nil {
		return 0
	}
	n := 0
	for _, st := range list {
		if st.ppid != self || st.state != 'Z' || st.pgid == group || t.isChild(st.pid) {
			continue
		}
		var ws unix.WaitStatus
		if pid, err := unix.Wait4(st.pid, &ws, unix.WNOHANG, nil); err == nil && pid == st.pid {
			n++
		}
	}
	return n
}

// anyExited reports whether any child of this process has exited and not
// been waited for, without waiting for it (WNOWAIT leaves it to whoever
// owns it). It is one system call, where reapOrphans's scan reads the stat
// of every process on the host: with no such child, the common case of an
// idle agent, there is nothing to scan for. An unexpected error says yes,
// so the scan decides as it did without this check.
func anyExited() bool {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.ECHILD):
			return false
		case err != nil:
			return true
		}
		// Linux clears info when no child is waitable.
		return info.Signo != 0
	}
}
