package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

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
)

// fileStamp is what a watched file looked like after the agent's last run:
// a change event that leaves it as it was is the agent's own write.
type fileStamp struct {
	// stale marks a stamp that matches no file: the file was found
	// changed before its watch started.
	stale              bool
	exists             bool
	size               int64
	ino                uint64
	mode               os.FileMode
	mtime, ctime       int64
	mtimeNs, ctimeNsec int64
}

func stampOf(path string) fileStamp {
	fi, err := os.Lstat(path)
	if err != nil {
		return fileStamp{}
	}
	st := fileStamp{exists: true, size: fi.Size(), mode: fi.Mode()}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.ino = sys.Ino
		st.mtime, st.mtimeNs = sys.Mtim.Sec, sys.Mtim.Nsec
		st.ctime, st.ctimeNsec = sys.Ctim.Sec, sys.Ctim.Nsec
	}
	return st
}

// watchState is one assignment's watched files and repair backoff.
type watchState struct {
	paths map[string]fileStamp
	// lastRepair is when a watch run that changed something last
	// finished; backoff is the wait after it before the next watch run
	// may start
	lastRepair time.Time
	backoff    time.Duration
}

// watcher is the assigner's inotify watcher: parent directories are
// watched (an editor or a package replaces a file by renaming another
// over it), with a count of the paths needing each.
type watcher struct {
	fs   *fsnotify.Watcher
	dirs map[string]int
}

// events is the watcher's event channel; nil (never ready) without one.
func (w *watcher) events() chan fsnotify.Event {
	if w == nil || w.fs == nil {
		return nil
	}
	return w.fs.Events
}

func (w *watcher) errors() chan error {
	if w == nil || w.fs == nil {
		return nil
	}
	return w.fs.Errors
}

func (w *watcher) close() {
	if w != nil && w.fs != nil {
		_ = w.fs.Close()
	}
}

// add watches path's directory.
func (w *watcher) add(path string) error {
	dir := filepath.Dir(path)
	if w.dirs[dir] == 0 {
		if err := w.fs.Add(dir); err != nil {
			return fmt.Errorf("watch %s: %w", dir, err)
		}
	}
	w.dirs[dir]++
	return nil
}

// remove stops watching path's directory when no other path needs it.
func (w *watcher) remove(path string) {
	dir := filepath.Dir(path)
	if w.dirs[dir] == 0 {
		return
	}
	w.dirs[dir]--
	if w.dirs[dir] == 0 {
		delete(w.dirs, dir)
		_ = w.fs.Remove(dir)
	}
}

// watchedFiles are the file resources of a run's events that asked to be
// watched and did not fail.
func watchedFiles(events []*protocol.TransactionEvent) []string {
	var out []string
	for _, ev := range events {
		if ev == nil || ev.Type != protocol.TypeFile || ev.Failed || ev.Skipped || !filepath.IsAbs(ev.Name) {
			continue
		}
		b, err := json.Marshal(ev.Properties)
		if err != nil {
			continue
		}
		var p struct {
			Watch bool `json:"watch"`
		}
		if json.Unmarshal(b, &p) == nil && p.Watch {
			out = append(out, filepath.Clean(ev.Name))
		}
	}
	return out
}

// rewatch makes as's watched files those of its last run's events (a run
// that could not start leaves them as they were), recording how each looks
// now.
func (s *assigner) rewatch(as *assigned, reply *protocol.FleetReply) {
	if reply == nil || reply.Error != nil {
		return
	}
	paths := watchedFiles(reply.Events)
	ws := as.watch
	if len(paths) == 0 && ws == nil {
		return
	}
	if s.w == nil {
		fw, err := fsnotify.NewWatcher()
		if err != nil {
			s.a.log.Error("cannot watch files, watch: true is not in force", "error", err)
			return
		}
		s.w = &watcher{fs: fw, dirs: map[string]int{}}
	}
	if ws == nil {
		ws = &watchState{paths: map[string]fileStamp{}}
		as.watch = ws
	}
	keep := map[string]bool{}
	for _, p := range paths {
		keep[p] = true
		if _, ok := ws.paths[p]; !ok {
			if s.watchedCount() >= maxWatchedPaths {
				s.a.log.Error("too many watched files, not watching more", "assignment", as.name, "path", p, "limit", maxWatchedPaths)
				continue
			}
			if err := s.w.add(p); err != nil {
				s.a.log.Error("cannot watch a file", "assignment", as.name, "error", err)
				continue
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
	// A change between the run's write and this stamp (the run still had
	// to finish and record itself) would otherwise be taken for the run's
	// own result and never repaired: compare each file with the state the
	// run reported, and treat a difference as a change seen now.
	for _, ev := range reply.Events {
		if ev == nil || ev.Type != protocol.TypeFile {
			continue
		}
		p := filepath.Clean(ev.Name)
		if _, watched := ws.paths[p]; !watched || leftAsRun(p, ev.Status) {
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

// repaired updates as's backoff after a watch run that started at t and
// changed something, and returns the backoff when the file is flapping
// ("" otherwise).
func (s *assigner) repaired(as *assigned, t time.Time, reply *protocol.FleetReply) string {
	ws := as.watch
	if ws == nil || reply == nil {
		return ""
	}
	changed := false
	for _, ev := range reply.Events {
		if ev != nil && (ev.Changed || ev.Failed) {
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
	ws.lastRepair = s.a.now()
	if ws.backoff == 0 {
		return ""
	}
	s.a.log.Warn("a watched file keeps changing: repairs are backed off (flapping)", "assignment", as.name, "backoff", ws.backoff)
	return ws.backoff.String()
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
