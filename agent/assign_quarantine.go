package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ccm-fleet/ccm/internal/filecheck"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/sources"
)

// No input may kill an agent, and nothing that did runs again by itself.
// Before an assignment run starts, the agent journals it (durably: the
// file is synced before the run begins) and removes the entry when the run
// ends. An entry still marked running when the agent starts is a run the
// agent stopped on (killed, crashed, the host lost power): its count of
// stops goes up. A revision the agent stopped on QuarantineAfter times in
// a row is quarantined: never run again here, reported in history (so
// `ccm-orch status` shows the host quarantined, and why) and in the audit
// log, until a newer revision (another signed value) of the assignment is
// stored. A run that ends, however it ends, clears the count: only
// consecutive stops count.

// QuarantineFileName is the run journal below the state directory.
const QuarantineFileName = "quarantine.json"

// Quarantine bounds.
const (
	// QuarantineAfter is how many consecutive stops of the agent during
	// runs of one revision quarantine it.
	QuarantineAfter = 2
	// MaxQuarantineEntries bounds the assignments the journal keeps (runs
	// in flight, revisions stopped on, quarantined ones); a new one past
	// it drops the oldest.
	MaxQuarantineEntries = 1024
	// MaxQuarantineBytes bounds the journal file: room for
	// MaxQuarantineEntries entries of the longest source and bundle names.
	MaxQuarantineBytes = 8 << 20
)

// DecisionQuarantined is the audit decision of a revision quarantined at
// start (see quarantine); a run refused because its revision is
// quarantined is audited with the code quarantined as well.
const DecisionQuarantined = string(protocol.CodeQuarantined)

// inflight is what the journal keeps of one assignment: the revision last
// started, whether it is running, the times of the runs of it the agent
// stopped on, and when it was quarantined.
type inflight struct {
	// Revision is the store revision, Digest the SHA-256 of the stored
	// value: a quarantine holds for that value only, and another signed
	// value (a newer revision) clears it.
	Revision uint64 `json:"revision"`
	Digest   string `json:"digest"`
	// Bundle names the object store bundle the revision runs, with its
	// digest ("" for an inline manifest).
	Bundle string `json:"bundle,omitempty"`
	// Source is set for a manifest source's run (see sourceKey): Digest
	// is then the SHA-256 of its bundle or manifest, Revision 0.
	Source string `json:"source,omitempty"`
	// Running is set, durably, before the run starts and cleared when it
	// ends; Started is when it started.
	Running bool      `json:"running,omitempty"`
	Started time.Time `json:"started"`
	// Stops are the start times of the runs the agent stopped on, oldest
	// first (at most QuarantineAfter).
	Stops []time.Time `json:"stops,omitempty"`
	// Quarantined is when the revision was quarantined (zero: not).
	Quarantined time.Time `json:"quarantined,omitzero"`
}

// reason is what a quarantined revision is reported with.
func (e *inflight) reason(name string) string {
	times := make([]string, len(e.Stops))
	for i, t := range e.Stops {
		times[i] = t.UTC().Format(time.RFC3339)
	}
	if e.Source != "" {
		return fmt.Sprintf("the agent stopped %d times while applying manifest source %s (sha256 %s; runs started at %s); it is not run again on this host until the source changes",
			len(e.Stops), e.Source, e.Digest, joinAnd(times))
	}
	what := fmt.Sprintf("revision %d", e.Revision)
	if e.Bundle != "" {
		what += " (bundle " + e.Bundle + ")"
	}
	return fmt.Sprintf("the agent stopped %d times while applying %s of assignment %s (runs started at %s); it is not run again on this host until a newer revision is assigned",
		len(e.Stops), what, name, joinAnd(times))
}

// joinAnd joins words with commas and a final "and".
func joinAnd(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}

// stopped is one run the agent found, at start, that it had stopped on.
type stopped struct {
	name  string
	entry inflight
	// quarantined is whether this stop quarantined the revision
	quarantined bool
}

// sourceKey is the journal's key of a manifest source's runs; an
// assignment's key is its name (which has no ':').
func sourceKey(source string) string { return "source:" + source }

// quarantine is the run journal, shared by the assigner and the manifest
// sources. A nil journal journals nothing and holds nothing.
type quarantine struct {
	mu      sync.Mutex
	path    string
	entries map[string]*inflight
	// recorded is the digest whose quarantine this run of the agent has
	// reported, per name: it is logged once per start, and a manifest
	// source's (tried again under backoff) recorded in history once per
	// start
	recorded map[string]string
}

// openQuarantine reads the journal at path and counts each run found still
// running as a stop, quarantining the revisions stopped on QuarantineAfter
// times; the journal is saved again before it returns (a stop is counted
// once). A missing file is an empty journal. One that cannot be read or
// decoded is moved aside (path + ".bad") and an empty journal is used: the
// agent keeps running, and says so in the error.
func openQuarantine(path string, now time.Time) (*quarantine, []stopped, error) {
	q := &quarantine{path: path, entries: map[string]*inflight{}, recorded: map[string]string{}}
	entries, err := loadQuarantine(path)
	if err != nil {
		_ = os.Rename(path, path+".bad")
		return q, nil, fmt.Errorf("%w (moved to %s.bad; stops recorded in it are forgotten)", err, path)
	}
	q.entries = entries
	var out []stopped
	for _, name := range slices.Sorted(maps.Keys(entries)) {
		e := entries[name]
		if !e.Running {
			continue
		}
		e.Running = false
		e.Stops = append(e.Stops, e.Started.UTC())
		if n := len(e.Stops); n > QuarantineAfter {
			e.Stops = e.Stops[n-QuarantineAfter:]
		}
		st := stopped{name: name}
		if len(e.Stops) >= QuarantineAfter && e.Quarantined.IsZero() {
			e.Quarantined = now.UTC()
			st.quarantined = true
		}
		st.entry = *e
		out = append(out, st)
	}
	if len(out) > 0 {
		if err := q.save(); err != nil {
			return q, out, err
		}
	}
	return q, out, nil
}

// loadQuarantine reads and checks the journal at path.
func loadQuarantine(path string) (map[string]*inflight, error) {
	entries := map[string]*inflight{}
	data, err := filecheck.ReadBounded(path, MaxQuarantineBytes)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return entries, nil
	case err != nil:
		return nil, fmt.Errorf("run journal %s: %w", path, err)
	}
	if _, err := protocol.DecodeStrict(data, &entries, protocol.Limits{MaxBytes: MaxQuarantineBytes}); err != nil {
		return nil, fmt.Errorf("run journal %s: %s", path, protocol.AsError(err).Message)
	}
	if len(entries) > MaxQuarantineEntries {
		return nil, fmt.Errorf("run journal %s: %d assignments, the limit is %d", path, len(entries), MaxQuarantineEntries)
	}
	for name, e := range entries {
		if src, ok := strings.CutPrefix(name, "source:"); ok {
			if e == nil || e.Source != src || len(src) > sources.MaxSourceLength || strings.ContainsAny(src, "\x00\n\r") {
				return nil, fmt.Errorf("run journal %s: malformed entry %.100q", path, name)
			}
		} else if err := protocol.ValidateAssignmentName(name); err != nil {
			return nil, fmt.Errorf("run journal %s: %s", path, protocol.AsError(err).Message)
		}
		if e == nil || len(e.Stops) > QuarantineAfter {
			return nil, fmt.Errorf("run journal %s: assignment %s: malformed entry", path, name)
		}
	}
	return entries, nil
}

// firstReport reports whether the quarantine of name's value digest is to
// be recorded (once per start of the agent), and notes it recorded.
func (q *quarantine) firstReport(name, digest string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.recorded[name] == digest {
		return false
	}
	q.recorded[name] = digest
	return true
}

// save writes the journal atomically and durably; q.mu is held (or q not
// shared yet).
func (q *quarantine) save() error {
	data, err := json.Marshal(q.entries)
	if err == nil && len(data) > MaxQuarantineBytes {
		err = fmt.Errorf("%d bytes, the limit is %d", len(data), MaxQuarantineBytes)
	}
	if err == nil {
		err = writeDurably(q.path, data)
	}
	if err != nil {
		return fmt.Errorf("run journal %s: %w", q.path, err)
	}
	return nil
}

// held is the quarantine of name's revision stored as digest; nil when
// it is not quarantined.
func (q *quarantine) held(name, digest string) *inflight {
	if q == nil {
		return nil
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if e := q.entries[name]; e != nil && !e.Quarantined.IsZero() && e.Digest == digest {
		c := *e
		return &c
	}
	return nil
}

// begin journals, durably, that a run of name's revision (stored as
// digest, running bundle when not "") starts at now. Another revision
// than the one journaled replaces its entry, clearing its stops and its
// quarantine (returned, when it had one). An error means the run must not
// start: it could not be journaled.
func (q *quarantine) begin(name string, revision uint64, digest, bundle string, now time.Time) (cleared *inflight, err error) {
	if q == nil {
		return nil, nil
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	old, had := q.entries[name]
	var kept inflight
	if had {
		kept = *old
	}
	e := old
	if e != nil && e.Digest != digest {
		if !e.Quarantined.IsZero() {
			old := *e
			cleared = &old
		}
		e = nil
	}
	if e == nil {
		e = &inflight{Revision: revision, Digest: digest, Bundle: bundle}
		if src, ok := strings.CutPrefix(name, "source:"); ok {
			e.Source = src
		}
		q.evictFor(name)
	}
	e.Revision, e.Running, e.Started = revision, true, now.UTC()
	q.entries[name] = e
	if err := q.save(); err != nil {
		// The file is as it was; so is name's entry in memory.
		if had {
			*old = kept
			q.entries[name] = old
		} else {
			delete(q.entries, name)
		}
		return nil, err
	}
	return cleared, nil
}

// evictFor makes room for a new entry of name by dropping the entries
// started longest ago.
func (q *quarantine) evictFor(name string) {
	if _, ok := q.entries[name]; ok {
		return
	}
	for len(q.entries) >= MaxQuarantineEntries {
		oldest := ""
		for n, e := range q.entries {
			if oldest == "" || e.Started.Before(q.entries[oldest].Started) {
				oldest = n
			}
		}
		delete(q.entries, oldest)
	}
}

// finish journals that the run of name's revision stored as digest ended:
// its entry is removed (its stops were not consecutive).
func (q *quarantine) finish(name, digest string) error {
	if q == nil {
		return nil
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if e := q.entries[name]; e == nil || e.Digest != digest {
		return nil
	}
	delete(q.entries, name)
	return q.save()
}

// forget drops name's entry (a signed removal of the assignment).
func (q *quarantine) forget(name string) error {
	if q == nil {
		return nil
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if _, ok := q.entries[name]; !ok {
		return nil
	}
	delete(q.entries, name)
	return q.save()
}
