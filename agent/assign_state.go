package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/ccm-fleet/ccm/internal/filecheck"
	"github.com/ccm-fleet/ccm/protocol"
)

// Assignment state bounds.
const (
	// MaxAssignmentStates bounds the assignment names the state file
	// keeps (removed ones included: their high-water marks stay).
	MaxAssignmentStates = 4096
	// MaxAssignmentStateBytes bounds the state file.
	MaxAssignmentStateBytes = 4 << 20
)

// ErrAssignmentState is returned when the assignment state file cannot be
// read or written. A file that does not decode stops the agent: it holds
// the high-water marks that keep assignments from being rolled back, and
// running without them would run again what it refused before.
var ErrAssignmentState = errors.New("assignment state unusable")

// assignmentState is what the state file keeps of one assignment: when it
// last ran (the schedule), and its high-water mark, the newest signed
// revision or removal this agent accepted. Nothing signed at or before the
// mark is ever run again, whatever the store holds: the mark outlives a
// delete of the store's key and a restart.
type assignmentState struct {
	// Revision is the store revision last run, LastRun when.
	Revision uint64    `json:"revision"`
	LastRun  time.Time `json:"last_run,omitzero"`
	// Refused is the revision whose refusal was recorded, so a restart
	// does not record it again.
	Refused uint64 `json:"refused,omitempty"`
	// Created is when the newest accepted revision (or removal) was
	// signed: the high-water mark.
	Created time.Time `json:"created,omitzero"`
	// Accepted is that revision's store revision and Digest the SHA-256
	// of its stored value: a restart finds it again in the store's
	// history when the current value is not it.
	Accepted uint64 `json:"accepted,omitempty"`
	Digest   string `json:"digest,omitempty"`
	// Owner is the public key of the signer that stored the name: only
	// it, or an assignments administrator, may replace or remove it. ""
	// when the name is free (never stored, or removed).
	Owner string `json:"owner,omitempty"`
	// Removed is whether the mark is a signed removal.
	Removed bool `json:"removed,omitempty"`
}

// loadAssignmentState reads the state file at path: a missing file is an
// empty state; one that is too large, does not decode or names more than
// MaxAssignmentStates assignments is an error naming the file.
func loadAssignmentState(path string) (map[string]assignmentState, error) {
	state := map[string]assignmentState{}
	data, err := filecheck.ReadBounded(path, MaxAssignmentStateBytes)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return state, nil
	case err != nil:
		return nil, fmt.Errorf("%w: %s: %w (it holds the assignments' high-water marks: fix or restore it)", ErrAssignmentState, path, err)
	}
	if _, err := protocol.DecodeStrict(data, &state, protocol.Limits{MaxBytes: MaxAssignmentStateBytes}); err != nil {
		return nil, fmt.Errorf("%w: %s: %s (it holds the assignments' high-water marks: fix or restore it)", ErrAssignmentState, path, protocol.AsError(err).Message)
	}
	if len(state) > MaxAssignmentStates {
		return nil, fmt.Errorf("%w: %s: %d assignments, the limit is %d", ErrAssignmentState, path, len(state), MaxAssignmentStates)
	}
	for name := range state {
		if err := protocol.ValidateAssignmentName(name); err != nil {
			return nil, fmt.Errorf("%w: %s: %s", ErrAssignmentState, path, protocol.AsError(err).Message)
		}
	}
	return state, nil
}

// saveAssignmentState writes state to path atomically and durably: a
// temporary file in the same directory, synced, renamed over path, and the
// directory synced.
func saveAssignmentState(path string, state map[string]assignmentState) error {
	data, err := json.Marshal(state)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrAssignmentState, path, err)
	}
	if len(data) > MaxAssignmentStateBytes {
		return fmt.Errorf("%w: %s: %d bytes, the limit is %d", ErrAssignmentState, path, len(data), MaxAssignmentStateBytes)
	}
	if err := writeDurably(path, data); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrAssignmentState, path, err)
	}
	return nil
}

// writeDurably writes data to path atomically and durably: a temporary
// file in the same directory, mode 0600, synced, renamed over path, and
// the directory synced.
func writeDurably(path string, data []byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	done := false
	defer func() {
		if !done {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if err := tmp.Chmod(0o600); err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	done = true
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
