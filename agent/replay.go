package agent

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// ReplayFileName is the replay cache's file below the state directory.
const ReplayFileName = "replay.log"

// Replay cache bounds.
const (
	// DefaultReplayMaxEntries bounds the request ids remembered at once.
	DefaultReplayMaxEntries = 100000
	// DefaultReplayMaxBytes bounds the ids and first replies kept.
	DefaultReplayMaxBytes = 32 << 20
	// MaxReplayReplyBytes bounds one kept first reply; a larger one is not
	// kept (the duplicate is still refused, without the first events).
	MaxReplayReplyBytes = 64 << 10
	// maxReplayLine bounds one line read back from the file.
	maxReplayLine = MaxReplayReplyBytes + 1024
)

// ErrReplayFull is returned when the replay cache holds its maximum of
// unexpired entries: the request is refused rather than risk a replay.
var ErrReplayFull = errors.New("replay cache full")

// replayEntry is one request id seen, kept until Expires (created + ttl +
// max clock skew): the first reply once there is one, and whether this
// host was left out of the request (its duplicates get no answer). Done is
// set when the request was answered; an entry read back at start without
// it is a request the agent stopped on (crashed, killed) while it was
// queued or running.
//
// In memory an entry does not hold its reply: the reply stays in the file,
// in the entry's line at line (offset, length), and is read back only for
// a duplicate. An agent answers every request and duplicates are rare, so
// this keeps a host's memory flat however many requests it remembers.
type replayEntry struct {
	ID      string          `json:"id"`
	Expires time.Time       `json:"expires"`
	Seen    time.Time       `json:"seen"`
	Ignored bool            `json:"ignored,omitempty"`
	Done    bool            `json:"done,omitempty"`
	Reply   json.RawMessage `json:"reply,omitempty"`
	// Who is who sent the request and what it asks, in the line written
	// when it was received (not kept in memory, see addWith)
	Who *replayWho `json:"who,omitempty"`

	// whoLen is the length of Who as kept in the file, replyLen is the length of the reply kept in the file (0: none), and
	// line where the entry's line is in the file
	whoLen   int
	replyLen int
	line     fileSpan
}

// replayWho is who sent a request and what it asks, as its audit line
// names them: the journal keeps them in the line written when the request
// is received, so a request the agent stopped on is audited at the next
// start with its subject, signer and resources.
type replayWho struct {
	Subject   string      `json:"subject,omitempty"`
	Signer    AuditSigner `json:"signer"`
	Resources []string    `json:"resources,omitempty"`
}

// newReplayWho takes who and what from an audit line, bounded as the
// audit line bounds them.
func newReplayWho(rec *AuditRecord) *replayWho {
	w := &replayWho{Subject: clip(rec.Subject), Signer: AuditSigner{Name: clip(rec.Signer.Name), Key: clip(rec.Signer.Key)}}
	for i, ref := range rec.Resources {
		if i == maxAuditResources {
			w.Resources = append(w.Resources, fmt.Sprintf("... and %d more", len(rec.Resources)-i))
			break
		}
		w.Resources = append(w.Resources, clip(ref))
	}
	return w
}

// size is the bytes w takes in a line.
func (w *replayWho) size() int {
	if w == nil {
		return 0
	}
	n := len(w.Subject) + len(w.Signer.Name) + len(w.Signer.Key) + 64
	for _, r := range w.Resources {
		n += len(r) + 3
	}
	return n
}

// fileSpan is where a line is in the replay file.
type fileSpan struct {
	off int64
	n   int
}

// size is what the entry counts against the cache's byte bound: the id and
// the reply kept for it in the file.
func (e *replayEntry) size() int64 { return int64(len(e.ID) + e.replyLen + e.whoLen + 64) }

// replayCache remembers the ids of received requests, in memory and in an
// append-only file of JSON lines (last line per id wins) that is read back
// at start, so a request is run at most once across restarts. The file is
// rewritten with the live entries when it grows past twice their size.
type replayCache struct {
	path       string
	maxEntries int
	maxBytes   int64

	// guards everything below
	mu        sync.Mutex
	entries   map[string]*replayEntry
	bytes     int64
	file      *os.File
	fileBytes int64
	adds      int
	// interrupted are the entries read back at start that were never
	// answered, expired ones included, oldest first
	interrupted []replayEntry
}

// openReplayCache loads the cache kept at path (expired entries dropped;
// unreadable lines skipped) and opens it for appending, mode 0600.
func openReplayCache(path string, maxEntries int, maxBytes int64, now time.Time) (*replayCache, error) {
	c := &replayCache{path: path, maxEntries: maxEntries, maxBytes: maxBytes, entries: map[string]*replayEntry{}}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("replay cache %s: %w", path, err)
	}
	existed, err := c.load(now)
	if err != nil {
		return nil, err
	}
	if existed {
		// Keep only the live entries.
		err = c.rewriteLocked()
	} else {
		c.file, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	}
	if err != nil {
		return nil, fmt.Errorf("replay cache %s: %w", path, err)
	}
	return c, nil
}

// load reads the file, keeping the last line of every unexpired id, and
// reports whether there was one.
func (c *replayCache) load(now time.Time) (bool, error) {
	f, err := os.Open(c.path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("replay cache %s: %w", c.path, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), maxReplayLine)
	var off int64
	for sc.Scan() {
		line := fileSpan{off: off, n: len(sc.Bytes())}
		off += int64(line.n) + 1
		var e replayEntry
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.ID == "" {
			continue
		}
		e.replyLen, e.Reply, e.line = len(e.Reply), nil, line
		e.whoLen = e.Who.size()
		if old, ok := c.entries[e.ID]; ok {
			c.bytes -= old.size()
		}
		c.entries[e.ID] = &e
		c.bytes += e.size()
	}
	if err := sc.Err(); err != nil && !errors.Is(err, bufio.ErrTooLong) {
		return true, fmt.Errorf("replay cache %s: %w", c.path, err)
	}
	for _, e := range c.entries {
		// A file written before Done existed: an answer kept means done.
		if !e.Done && !e.Ignored && e.replyLen == 0 {
			c.interrupted = append(c.interrupted, *e)
		}
		// Who stays in the file only.
		e.Who = nil
	}
	slices.SortFunc(c.interrupted, func(x, y replayEntry) int { return x.Seen.Compare(y.Seen) })
	c.purgeLocked(now)
	return true, nil
}

// takeInterrupted returns, once, the requests found unanswered when the
// cache was opened: each was received by an agent that stopped before it
// finished.
func (c *replayCache) takeInterrupted() []replayEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.interrupted
	c.interrupted = nil
	return out
}

// add records id as seen now until expires. When it was seen before it
// returns the first entry and dup true. A full cache (after dropping
// expired entries) is ErrReplayFull; a failure to persist is an error and
// the id is not remembered.
func (c *replayCache) add(id string, expires, now time.Time) (first replayEntry, dup bool, err error) {
	return c.addWith(id, expires, now, nil)
}

// addWith is add that also journals who sent the request and what it
// asks (nil: not known), in the same line, so a restart after a crash
// knows them (see takeInterrupted). Who is kept in the file only.
func (c *replayCache) addWith(id string, expires, now time.Time, who *replayWho) (first replayEntry, dup bool, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[id]; ok && e.Expires.After(now) {
		first = *e
		first.Reply = c.readReplyLocked(e)
		return first, true, nil
	}
	c.adds++
	if len(c.entries) >= c.maxEntries || c.bytes >= c.maxBytes || c.adds%1024 == 0 {
		c.purgeLocked(now)
	}
	e := &replayEntry{ID: id, Expires: expires.UTC(), Seen: now.UTC(), Who: who, whoLen: who.size()}
	if len(c.entries) >= c.maxEntries || c.bytes+e.size() > c.maxBytes {
		return replayEntry{}, false, fmt.Errorf("%w: %d requests remembered (%d bytes) until they expire", ErrReplayFull, len(c.entries), c.bytes)
	}
	err = c.appendLocked(e)
	e.Who = nil
	if err != nil {
		return replayEntry{}, false, err
	}
	c.entries[id] = e
	c.bytes += e.size()
	return replayEntry{}, false, nil
}

// finish keeps the first reply of id (when it fits) and, with ignored,
// that this host was not asked.
func (c *replayCache) finish(id string, reply []byte, ignored bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[id]
	if !ok {
		return nil
	}
	n := *e
	n.Ignored = ignored
	n.Done = true
	n.whoLen = 0
	if len(reply) <= MaxReplayReplyBytes && c.bytes+int64(len(reply)) <= c.maxBytes {
		n.Reply, n.replyLen = reply, len(reply)
	}
	err := c.appendLocked(&n)
	n.Reply = nil
	if err != nil {
		return err
	}
	c.bytes += n.size() - e.size()
	c.entries[id] = &n
	return nil
}

// len is how many ids the cache remembers.
func (c *replayCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

// close closes the file.
func (c *replayCache) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.file == nil {
		return nil
	}
	err := c.file.Close()
	c.file = nil
	return err
}
