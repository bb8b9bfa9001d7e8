package agent

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/ccm-fleet/ccm/resources/engine"
	"github.com/ccm-fleet/ccm/resources/filetype"
)

// errNoInotify is wrapped by the errors of a directory watch that cannot
// be set up because inotify cannot be used (no watcher could be made).
var errNoInotify = errors.New("inotify unavailable")

// watcher is the assigner's inotify watcher: parent directories are
// watched (an editor or a package replaces a file by renaming another
// over it), with a count of the paths needing each. A directory whose
// watch could not be set up, or was lost (the directory removed or
// renamed), is set up again by rearm; until then, and always, the
// periodic check compares the files themselves.
type watcher struct {
	// fs is nil when inotify cannot be used: only the periodic check
	// runs until a new watcher can be made
	fs   *fsnotify.Watcher
	dirs map[string]int
	// armed are the directories with an inotify watch in place
	armed map[string]bool
}

func newWatcher() *watcher {
	w := &watcher{dirs: map[string]int{}, armed: map[string]bool{}}
	if fw, err := fsnotify.NewWatcher(); err == nil {
		w.fs = fw
	}
	return w
}

// events is the watcher's event channel; nil (never ready) without one.
func (w *watcher) events() chan fsnotify.Event {
	if w == nil || w.fs == nil {
		return nil
	}
	return w.fs.Events
}

// pollC is poll's channel while some file is watched, nil (never ready)
// otherwise: a channel timer nobody waits on is not run, so an agent
// without watched files is not woken every watchPollInterval for nothing.
func (w *watcher) pollC(poll *time.Ticker) <-chan time.Time {
	if w == nil || len(w.dirs) == 0 {
		return nil
	}
	return poll.C
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

// add counts path's directory as needed and watches it; an error says the
// directory is not watched yet (rearm tries again), the path is counted
// all the same.
func (w *watcher) add(path string) error {
	dir := filepath.Dir(path)
	w.dirs[dir]++
	return w.arm(dir)
}

// arm sets up the inotify watch of dir unless it is in place.
func (w *watcher) arm(dir string) error {
	if w.armed[dir] {
		return nil
	}
	if w.fs == nil {
		return fmt.Errorf("watch %s: %w", dir, errNoInotify)
	}
	if err := w.fs.Add(dir); err != nil {
		return fmt.Errorf("watch %s: %w", dir, err)
	}
	w.armed[dir] = true
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
		if w.armed[dir] {
			delete(w.armed, dir)
			_ = w.fs.Remove(dir)
		}
	}
}

// lost takes an event on a watched directory itself: removed or renamed,
// its inotify watch is gone (or follows the old directory), so it is
// dropped, to be set up again on whatever directory has the name now.
// It reports whether ev was such an event.
func (w *watcher) lost(ev fsnotify.Event) bool {
	dir := filepath.Clean(ev.Name)
	if w.dirs[dir] == 0 || !ev.Has(fsnotify.Remove) && !ev.Has(fsnotify.Rename) {
		return false
	}
	if w.armed[dir] {
		delete(w.armed, dir)
		_ = w.fs.Remove(dir) // fsnotify may have dropped it already
	}
	return true
}

// broken drops the inotify watcher (its channels closed): every directory
// is set up again on a new one by rearm.
func (w *watcher) broken() {
	w.close()
	w.fs = nil
	clear(w.armed)
}

// rearm sets up every needed directory watch not in place (making a new
// inotify watcher first when there is none) and returns the errors of
// those that still cannot be.
func (w *watcher) rearm() []error {
	if w.fs == nil {
		fw, err := fsnotify.NewWatcher()
		if err != nil {
			return []error{fmt.Errorf("%w: %w", errNoInotify, err)}
		}
		w.fs = fw
	}
	var errs []error
	for dir := range w.dirs {
		if err := w.arm(dir); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

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

// watchedPath is the file a prepared resource asks to be watched, read
// from its typed properties: a file resource with watch set and an
// absolute path, failed or skipped ones included (a resource that could
// not be applied is still the host's to keep as declared, and a run that
// fails must not end its watch).
func watchedPath(p *engine.Prepared) (string, bool) {
	fp, ok := p.Properties.(*filetype.Properties)
	if !ok || !fp.Watch || !filepath.IsAbs(fp.Name) {
		return "", false
	}
	return filepath.Clean(fp.Name), true
}
