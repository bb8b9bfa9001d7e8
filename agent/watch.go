package agent

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/fsnotify/fsnotify"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources/filetype"
)

// Watch-based repair bounds.
const (
	// WatchDebounce is how long after a watched file changes the
	// assignment runs again, so a burst of writes is one repair.
	WatchDebounce = 250 * time.Millisecond
	// watchFlapWindow: a repair starting this soon after the previous one
	// finished doubles the wait before the next (from 2×WatchDebounce up
	// to watchMaxBackoff); a quieter file starts again without one.
	// Counted from the end of a repair, so that slow repairs (a loaded
	// disk's fsync can take seconds) still count as a file that keeps
	// changing.
	watchFlapWindow = 2 * time.Second
	// watchMaxBackoff bounds the wait between two repairs of a file that
	// keeps changing.
	watchMaxBackoff = 5 * time.Minute
	// maxWatchedPaths bounds the files one agent watches.
	maxWatchedPaths = 4096
	// watchPollInterval is how often every watched file is compared with
	// how the last run left it, whatever inotify reported, and a lost
	// directory watch is set up again: the fallback that keeps a watch in
	// force when events are lost (overflow), a watched directory is
	// removed or replaced, or inotify cannot be used at all.
	watchPollInterval = 10 * time.Second
	// maxWatchErrorBytes bounds the error of a failed repair kept for
	// status.
	maxWatchErrorBytes = 512
)

// watchState is one assignment's watched files and repair backoff.
type watchState struct {
	paths map[string]fileStamp
	// lastRepair is when a watch run that changed something last
	// finished; backoff is the wait after it before the next watch run
	// may start
	lastRepair time.Time
	backoff    time.Duration
	// failures counts the watch repairs that failed since the watch
	// started; lastError and failedAt are the latest one's. A failed
	// repair never ends the watch: it is tried again after the backoff.
	failures  int
	lastError string
	failedAt  time.Time
}

// startWatcher makes the inotify watcher when there is none yet.
func (s *assigner) startWatcher() {
	if s.w != nil {
		return
	}
	s.w = newWatcher()
	if s.w.fs == nil {
		s.a.log.Error("cannot watch files with inotify: watched files are checked every " + watchPollInterval.String() + " instead")
	}
}

// rewatch makes as's watched files paths, those its last run asked to be
// watched (a run that could not start leaves them as they were), recording
// how each looks now.
func (s *assigner) rewatch(as *assigned, reply *protocol.FleetReply, paths []string, wants map[string]fileWant) {
	if reply == nil || reply.Error != nil {
		return
	}
	paths = slices.Clone(paths)
	ws := as.watch
	if len(paths) == 0 && ws == nil {
		return
	}
	s.startWatcher()
	if ws == nil {
		ws = &watchState{paths: map[string]fileStamp{}}
		as.watch = ws
	}
	keep := map[string]bool{}
	// A failed or skipped resource whose event no longer says watch (its
	// properties could not be resolved) stays watched as it was.
	for _, ev := range reply.Events {
		if ev == nil || ev.Type != protocol.TypeFile || !ev.Failed && !ev.Skipped {
			continue
		}
		if p := filepath.Clean(ev.Name); !slices.Contains(paths, p) {
			if _, ok := ws.paths[p]; ok {
				paths = append(paths, p)
			}
		}
	}
	for _, p := range paths {
		keep[p] = true
		if _, ok := ws.paths[p]; !ok {
			if s.watchedCount() >= maxWatchedPaths {
				s.a.log.Error("too many watched files, not watching more", "assignment", as.name, "path", p, "limit", maxWatchedPaths)
				continue
			}
			if err := s.w.add(p); err != nil {
				s.a.log.Warn("cannot watch a file's directory yet: the file is checked every "+watchPollInterval.String()+" until it can be", "assignment", as.name, "path", p, "error", err)
			}
		}
		ws.paths[p] = stampOf(p)
	}
	for p := range ws.paths {
		if !keep[p] {
			s.w.remove(p)
			delete(ws.paths, p)
		}
	}
	s.catchUp(ws, reply, wants)
}

// catchUp treats as a change seen now each watched file that differs from
// what its resource declares (or, when the run did not say, from the state
// the run reported): a change between the run's write and its stamp (the
// run still had to finish and record itself) would otherwise be taken for
// the run's own result and never repaired. A resource that failed is
// judged by its declaration too: a change between its write and its
// read-back fails it (the desired state was not reached) and leaves its
// event without a state, so nothing else would tell the change from the
// run's result; its repair, when it fails again, is tried again under the
// watch's backoff like any failed repair. A skipped resource (not
// managed) is judged by its reported state only.
func (s *assigner) catchUp(ws *watchState, reply *protocol.FleetReply, wants map[string]fileWant) {
	for _, ev := range reply.Events {
		if ev == nil || ev.Type != protocol.TypeFile {
			continue
		}
		p := filepath.Clean(ev.Name)
		if _, watched := ws.paths[p]; !watched {
			continue
		}
		if w, ok := wants[p]; ok && !ev.Skipped {
			if !w.differs(p) {
				continue
			}
		} else if leftAsRun(p, ev.Status) {
			continue
		}
		ws.paths[p] = fileStamp{stale: true}
		s.changed(fsnotify.Event{Name: p, Op: fsnotify.Write})
	}
}

// maxVerifyBytes bounds the file a watch start hashes to compare with the
// run's reported checksum; a larger one is compared by size and mode only.
const maxVerifyBytes = 16 << 20

// leftAsRun says whether the file at path still is what the run reported
// in status (size, mode and content checksum); true when status says too
// little to tell.
func leftAsRun(path string, status protocol.State) bool {
	st, ok := status.(*protocol.FileState)
	if !ok || st == nil || st.Metadata == nil {
		return true
	}
	md := st.Metadata
	fi, err := os.Lstat(path)
	if err != nil {
		return st.Ensure == filetype.EnsureAbsent
	}
	sys, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return true
	}
	if md.Mode != "" && filetype.FormatMode(sys.Mode&0o7777) != md.Mode {
		return false
	}
	if !fi.Mode().IsRegular() || md.Checksum == "" {
		return true
	}
	if fi.Size() != md.Size {
		return false
	}
	if fi.Size() > maxVerifyBytes {
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sum, err := filetype.ChecksumFile(ctx, path)
	return err != nil || sum == md.Checksum
}

// unwatch stops watching as's files.
func (s *assigner) unwatch(as *assigned) {
	if as == nil || as.watch == nil || s.w == nil {
		return
	}
	for p := range as.watch.paths {
		s.w.remove(p)
	}
	as.watch = nil
}

func (s *assigner) watchedCount() int {
	n := 0
	for _, as := range s.known {
		if as.watch != nil {
			n += len(as.watch.paths)
		}
	}
	return n
}

// changed takes a change event: each assignment watching the file, when
// the file no longer looks as the last run left it, runs again after the
// debounce (or its backoff, when it keeps changing).
func (s *assigner) changed(ev fsnotify.Event) {
	path := filepath.Clean(ev.Name)
	now := s.a.now()
	for _, as := range s.known {
		if as.watch == nil || !as.selected || as.refusal != nil {
			continue
		}
		stamp, ok := as.watch.paths[path]
		if !ok || stampOf(path) == stamp {
			continue
		}
		at := now.Add(WatchDebounce)
		if !as.watch.lastRepair.IsZero() {
			at = later(at, as.watch.lastRepair.Add(as.watch.backoff))
		}
		if as.trigger == protocol.TriggerWatch && !as.next.IsZero() && !as.next.After(at) {
			continue // a repair is already due
		}
		if as.next.IsZero() || as.next.After(at) || as.trigger != protocol.TriggerWatch {
			as.next, as.trigger = at, protocol.TriggerWatch
		}
	}
}

// repaired updates as's backoff and failures after a watch run that
// started at t (sensitive: the resources it ran as sensitive), and returns the backoff when repairs are backed off (""
// otherwise). A run that changed something soon after the previous repair
// doubles the backoff (a file that keeps changing); a run that failed
// doubles it too, counts as a failed repair, and is tried again once the
// backoff has passed: a failed repair never ends a watch.
func (s *assigner) repaired(as *assigned, t time.Time, reply *protocol.FleetReply, sensitive map[string]bool) string {
	ws := as.watch
	if ws == nil || reply == nil {
		return ""
	}
	now := s.a.now()
	if failure := runFailure(reply, sensitive); failure != "" {
		ws.failures++
		ws.lastError, ws.failedAt = failure, now
		ws.backoff = min(max(2*ws.backoff, 2*WatchDebounce), watchMaxBackoff)
		ws.lastRepair = now
		as.next, as.trigger = now.Add(ws.backoff), protocol.TriggerWatch
		s.a.log.Warn("a watch repair failed: the file stays watched and is repaired again after the backoff",
			"assignment", as.name, "failures", ws.failures, "backoff", ws.backoff, "error", failure)
		return ws.backoff.String()
	}
	changed := false
	for _, ev := range reply.Events {
		if ev != nil && ev.Changed {
			changed = true
		}
	}
	if !changed {
		return ""
	}
	if !ws.lastRepair.IsZero() && t.Sub(ws.lastRepair) < watchFlapWindow+ws.backoff {
		ws.backoff = min(max(2*ws.backoff, 2*WatchDebounce), watchMaxBackoff)
	} else {
		ws.backoff = 0
	}
	ws.lastRepair = now
	if ws.backoff == 0 {
		return ""
	}
	s.a.log.Warn("a watched file keeps changing: repairs are backed off (flapping)", "assignment", as.name, "backoff", ws.backoff)
	return ws.backoff.String()
}

// runFailure says why a run failed, "" when it did not: the request's
// error or the first failed resource's, on one line and bounded. The
// message of a sensitive resource (type#name in sensitive, as the run
// prepared it) is not given.
func runFailure(reply *protocol.FleetReply, sensitive map[string]bool) string {
	msg := ""
	switch {
	case reply.Error != nil:
		msg = reply.Error.Message
	default:
		for _, ev := range reply.Events {
			if ev == nil || !ev.Failed {
				continue
			}
			msg = ev.ResourceID() + ": failed"
			if !sensitive[ev.ResourceID()] && len(ev.Errors) > 0 {
				msg = ev.ResourceID() + ": " + strings.Join(ev.Errors, "; ")
			}
			break
		}
	}
	msg = strings.Join(strings.Fields(strings.ToValidUTF8(msg, "?")), " ")
	if len(msg) > maxWatchErrorBytes {
		cut := maxWatchErrorBytes
		for cut > 0 && !utf8.RuneStart(msg[cut]) {
			cut--
		}
		msg = msg[:cut] + "..."
	}
	return msg
}

// fileEvent takes one inotify event: a watched directory removed or
// renamed has its watch set up again on whatever now has its name (and
// every watched file is compared); any other event is a possible change.
func (s *assigner) fileEvent(ev fsnotify.Event) {
	if s.w != nil && s.w.lost(ev) {
		s.a.log.Warn("a watched directory was removed or renamed: watching it again", "dir", ev.Name)
		s.poll()
		return
	}
	s.changed(ev)
}

// watcherFailed takes the end of the inotify watcher's channels or an
// error it reported (such as lost events): every directory watch is set
// up again and every watched file compared, so nothing it missed stays
// unrepaired.
func (s *assigner) watcherFailed(err error, closed bool) {
	if s.w == nil {
		return
	}
	if closed {
		s.w.broken()
	}
	s.a.log.Warn("the file watcher failed: every watched file is checked and its directory watched again", "error", err, "closed", closed)
	s.poll()
}

// poll is the periodic check: lost directory watches are set up again
// and every watched file is compared with how the last run left it.
func (s *assigner) poll() {
	if s.w == nil {
		return
	}
	for _, err := range s.w.rearm() {
		s.a.log.Debug("a watched directory cannot be watched yet: its files are checked every "+watchPollInterval.String(), "error", err)
	}
	for _, as := range s.known {
		if as.watch == nil {
			continue
		}
		for p := range as.watch.paths {
			s.changed(fsnotify.Event{Name: p, Op: fsnotify.Write})
		}
	}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
