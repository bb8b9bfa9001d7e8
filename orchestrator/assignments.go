package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"

	"github.com/ccm-fleet/ccm/jsstore"
	"github.com/ccm-fleet/ccm/protocol"
)

// ErrNoAssignment is returned for an assignment name (or revision) the
// store does not hold.
var ErrNoAssignment = errors.New("no such assignment")

// ErrRemovalKey is returned by RemoveAssignment without a signing key:
// agents remove an assignment only on a signed removal.
var ErrRemovalKey = errors.New("a signing key is required to remove an assignment: agents ignore unsigned removals")

// AssignmentEntry is one revision of an assignment as stored.
type AssignmentEntry struct {
	Name     string    `json:"name"`
	Revision uint64    `json:"revision"`
	Stored   time.Time `json:"stored"`
	// Signer is the public key the stored signature names.
	Signer string `json:"signer"`
	// Assignment is the signed document, nil when Problem says why it
	// could not be read.
	Assignment *protocol.Assignment `json:"assignment,omitempty"`
	// Removed is the signed removal stored in the assignment's place when
	// it was removed (ccm-orch assignments rm): agents stop running it.
	Removed *protocol.AssignmentRemoval `json:"removed,omitempty"`
	Problem string                      `json:"problem,omitempty"`
}

// Assign signs a with kp and stores it under a.Name, returning the new
// revision. a is validated first: nothing is stored when it is invalid.
func (c *Client) Assign(ctx context.Context, a *protocol.Assignment, kp nkeys.KeyPair) (uint64, error) {
	if kp == nil {
		return 0, fmt.Errorf("assignment %s: a signing key is required", a.Name)
	}
	if a.Created.IsZero() {
		a.Created = c.now().UTC()
	}
	value, err := protocol.SignAssignment(a, kp)
	if err != nil {
		return 0, fmt.Errorf("assignment %s: %w", a.Name, err)
	}
	kv, err := jsstore.OpenAssignmentsToWrite(ctx, c.js)
	if err != nil {
		return 0, err
	}
	rev, err := kv.Put(ctx, a.Name, value)
	if err != nil {
		return 0, fmt.Errorf("assignment %s: %w", a.Name, err)
	}
	return rev, nil
}

// Assignments lists the current revision of every assignment, by name; a
// removed one is listed with its removal (Removed).
func (c *Client) Assignments(ctx context.Context) ([]AssignmentEntry, error) {
	kv, err := jsstore.OpenAssignments(ctx, c.js)
	if err != nil {
		return nil, err
	}
	lister, err := kv.ListKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("assignments: %w", err)
	}
	var names []string
	for k := range lister.Keys() {
		names = append(names, k)
	}
	slices.Sort(names)
	out := make([]AssignmentEntry, 0, len(names))
	for _, n := range names {
		e, err := kv.Get(ctx, n)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue // removed meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("assignment %s: %w", n, err)
		}
		out = append(out, readEntry(e))
	}
	return out, nil
}

// Assignment returns one assignment: its current revision (revision 0) or
// the given one, which may be older than a removal. The current revision
// of a removed assignment is its removal (Removed set).
func (c *Client) Assignment(ctx context.Context, name string, revision uint64) (AssignmentEntry, error) {
	if err := protocol.ValidateAssignmentName(name); err != nil {
		return AssignmentEntry{}, protocol.Plain(err)
	}
	kv, err := jsstore.OpenAssignments(ctx, c.js)
	if err != nil {
		return AssignmentEntry{}, err
	}
	var e jetstream.KeyValueEntry
	if revision == 0 {
		e, err = kv.Get(ctx, name)
	} else {
		e, err = kv.GetRevision(ctx, name, revision)
	}
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound) && revision == 0:
		return AssignmentEntry{}, fmt.Errorf("%w %q", ErrNoAssignment, name)
	case errors.Is(err, jetstream.ErrKeyNotFound):
		return AssignmentEntry{}, fmt.Errorf("%w %q revision %d (past revisions: ccm-orch assignments show %s --history)", ErrNoAssignment, name, revision, name)
	case err != nil:
		return AssignmentEntry{}, fmt.Errorf("assignment %s: %w", name, err)
	}
	return readEntry(e), nil
}

// AssignmentHistory lists the revisions the store keeps of name, oldest
// first; a signed removal is an entry with Removed set, a bare delete of
// the key (which agents ignore) one without an assignment and the problem
// "deleted without a signature (agents ignore it)".
func (c *Client) AssignmentHistory(ctx context.Context, name string) ([]AssignmentEntry, error) {
	if err := protocol.ValidateAssignmentName(name); err != nil {
		return nil, protocol.Plain(err)
	}
	kv, err := jsstore.OpenAssignments(ctx, c.js)
	if err != nil {
		return nil, err
	}
	hist, err := kv.History(ctx, name)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, fmt.Errorf("%w %q", ErrNoAssignment, name)
	}
	if err != nil {
		return nil, fmt.Errorf("assignment %s: %w", name, err)
	}
	out := make([]AssignmentEntry, 0, len(hist))
	for _, e := range hist {
		if e.Operation() != jetstream.KeyValuePut {
			out = append(out, AssignmentEntry{Name: name, Revision: e.Revision(), Stored: e.Created(), Problem: "deleted without a signature (agents ignore it)"})
			continue
		}
		out = append(out, readEntry(e))
	}
	return out, nil
}

// RemoveAssignment removes an assignment: it stores a removal signed with
// kp in its place (its past revisions stay in the store's history), and
// agents stop running it when their policy trusts kp and kp stored it (or
// is an assignments administrator). A bare delete of the key would change
// nothing: agents ignore unsigned removals. author names who removed it,
// for people.
func (c *Client) RemoveAssignment(ctx context.Context, name, author string, kp nkeys.KeyPair) (uint64, error) {
	if kp == nil {
		return 0, fmt.Errorf("assignment %s: %w", name, ErrRemovalKey)
	}
	cur, err := c.Assignment(ctx, name, 0)
	if err != nil {
		return 0, err
	}
	if r := cur.Removed; r != nil {
		return 0, fmt.Errorf("%w %q: removed at %s by %s (revision %d)", ErrNoAssignment, name, r.Created.Format(time.RFC3339), r.Sender, cur.Revision)
	}
	value, err := protocol.SignAssignmentRemoval(&protocol.AssignmentRemoval{Name: name, Created: c.now().UTC(), Author: author, Revision: cur.Revision}, kp)
	if err != nil {
		return 0, fmt.Errorf("assignment %s: %w", name, err)
	}
	kv, err := jsstore.OpenAssignmentsToWrite(ctx, c.js)
	if err != nil {
		return 0, err
	}
	// Only over the revision read: a revision stored meanwhile is not
	// removed unseen.
	rev, err := kv.Update(ctx, name, value, cur.Revision)
	if err != nil {
		return 0, fmt.Errorf("assignment %s (revision %d): %w", name, cur.Revision, err)
	}
	return rev, nil
}

// readEntry decodes a stored revision; what does not decode is named in
// Problem (the signature is the agents' to judge, not checked here).
func readEntry(e jetstream.KeyValueEntry) AssignmentEntry {
	out := AssignmentEntry{Name: e.Key(), Revision: e.Revision(), Stored: e.Created()}
	s, err := protocol.DecodeSignedAssignment(e.Value(), protocol.Limits{MaxBytes: jsstore.MaxAssignmentValueSize + 1})
	if err != nil {
		out.Problem = protocol.AsError(err).Message
		return out
	}
	out.Signer = s.Signer
	if len(s.Removal) > 0 {
		r, err := protocol.DecodeAssignmentRemoval(s.Removal, protocol.Limits{MaxBytes: len(s.Removal)})
		if err != nil {
			out.Problem = protocol.AsError(err).Message
			return out
		}
		out.Removed = r
		return out
	}
	a, err := protocol.DecodeAssignment(s.Assignment, protocol.Limits{MaxBytes: jsstore.MaxAssignmentValueSize + 1})
	if err != nil {
		out.Problem = protocol.AsError(err).Message
		return out
	}
	out.Assignment = a
	return out
}
