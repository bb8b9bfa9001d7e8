package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// SpoolDirName is the directory below the state directory holding history
// records that could not be written to JetStream yet.
const SpoolDirName = "history-spool"

// spoolExt names spooled record files: <20-digit sequence>.json.
const spoolExt = ".json"

// spoolEntry is one history record waiting in the spool.
type spoolEntry struct {
	Subject string              `json:"subject"`
	MsgID   string              `json:"msg_id"`
	Header  map[string][]string `json:"header,omitempty"`
	Data    []byte              `json:"data"`
	// Kept is when the record went to the spool (zero in records kept by
	// an earlier version).
	Kept time.Time `json:"kept,omitzero"`
}

// spool keeps history records on disk, one file per record (mode 0600 in a
// 0700 directory), bounded by a record count and a byte size: when adding
// would pass either, the oldest records are dropped. The directory is made
// on the first record. Its methods are safe for concurrent use.
type spool struct {
	dir        string
	maxRecords int
	maxBytes   int64

	// guards every field below
	mu      sync.Mutex
	loaded  bool
	files   []spoolFile // oldest first
	bytes   int64
	next    uint64
	dropped int64
}

type spoolFile struct {
	name string
	size int64
}

func newSpool(dir string, maxRecords int, maxBytes int64) *spool {
	return &spool{dir: dir, maxRecords: maxRecords, maxBytes: maxBytes}
}

// loadLocked reads the directory once: what earlier runs left is kept and
// sent like new records.
func (s *spool) loadLocked() error {
	if s.loaded {
		return nil
	}
	entries, err := os.ReadDir(s.dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("history spool %s: %w", s.dir, err)
	}
	for _, e := range entries {
		name := e.Name()
		seq, ok := spoolSeq(name)
		if !ok || !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		s.files = append(s.files, spoolFile{name: name, size: info.Size()})
		s.bytes += info.Size()
		s.next = max(s.next, seq+1)
	}
	slices.SortFunc(s.files, func(a, b spoolFile) int { return strings.Compare(a.name, b.name) })
	s.loaded = true
	return nil
}

// spoolSeq parses a spool file name.
func spoolSeq(name string) (uint64, bool) {
	num, ok := strings.CutSuffix(name, spoolExt)
	if !ok || len(num) != 20 {
		return 0, false
	}
	n, err := strconv.ParseUint(num, 10, 64)
	return n, err == nil
}

// add writes e as the newest record, first dropping the oldest ones as
// needed to stay within the bounds. It returns how many it dropped.
func (s *spool) add(e spoolEntry) (int, error) {
	data, err := json.Marshal(e)
	if err != nil {
		return 0, fmt.Errorf("history spool: %w", err)
	}
	size := int64(len(data))
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.loadLocked(); err != nil {
		return 0, err
	}
	if size > s.maxBytes {
		s.dropped++
		return 1, fmt.Errorf("history spool: a record of %d bytes is larger than the spool (%d bytes)", size, s.maxBytes)
	}
	dropped := 0
	for len(s.files) > 0 && (len(s.files)+1 > s.maxRecords || s.bytes+size > s.maxBytes) {
		if err := s.removeLocked(s.files[0].name); err != nil {
			return dropped, err
		}
		dropped++
		s.dropped++
	}
	name := fmt.Sprintf("%020d%s", s.next, spoolExt)
	tmp, err := os.CreateTemp(s.dir, ".tmp-*")
	if errors.Is(err, os.ErrNotExist) {
		// the first record, or the directory was removed while the agent
		// runs: made (again) only then, not on every record
		if err = os.MkdirAll(s.dir, 0o700); err == nil {
			tmp, err = os.CreateTemp(s.dir, ".tmp-*")
		}
	}
	if err != nil {
		return dropped, fmt.Errorf("history spool: %w", err)
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	// CreateTemp made the file 0600.
	if err := errors.Join(werr, cerr, os.Rename(tmp.Name(), filepath.Join(s.dir, name))); err != nil {
		_ = os.Remove(tmp.Name())
		return dropped, fmt.Errorf("history spool: %w", err)
	}
	s.next++
	s.files = append(s.files, spoolFile{name: name, size: size})
	s.bytes += size
	return dropped, nil
}

// list returns the names of the spooled records, oldest first.
func (s *spool) list() ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.loadLocked(); err != nil {
		return nil, err
	}
	out := make([]string, len(s.files))
	for i, f := range s.files {
		out[i] = f.name
	}
	return out, nil
}

// read returns one spooled record.
func (s *spool) read(name string) (spoolEntry, error) {
	var e spoolEntry
	data, err := os.ReadFile(filepath.Join(s.dir, name))
	if err != nil {
		return e, fmt.Errorf("history spool: %w", err)
	}
	if err := json.Unmarshal(data, &e); err != nil {
		return e, fmt.Errorf("history spool %s: %w", name, err)
	}
	return e, nil
}

// remove deletes one spooled record.
func (s *spool) remove(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.removeLocked(name)
}

func (s *spool) removeLocked(name string) error {
	i := slices.IndexFunc(s.files, func(f spoolFile) bool { return f.name == name })
	if i < 0 {
		return nil
	}
	if err := os.Remove(filepath.Join(s.dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("history spool: %w", err)
	}
	s.bytes -= s.files[i].size
	s.files = slices.Delete(s.files, i, i+1)
	return nil
}

// SpoolStats describes an agent's history spool.
type SpoolStats struct {
	// Records and Bytes are what the spool holds now.
	Records int
	Bytes   int64
	// Dropped counts records dropped to stay within the bounds.
	Dropped int64
}

func (s *spool) stats() SpoolStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	_ = s.loadLocked()
	return SpoolStats{Records: len(s.files), Bytes: s.bytes, Dropped: s.dropped}
}
