package protocol

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nkeys"
)

// AssignmentRemovalProtocol identifies a signed removal of an assignment
// (a tombstone): agents stop running the named assignment only on one of
// these, signed by a key their policy trusts, never on a bare delete of
// the store's key.
const AssignmentRemovalProtocol = "io.choria.ccm.v1.assignment.removal"

// AssignmentRemoval is a tombstone: Name removed at Created by Sender.
// It is stored under Name in place of the assignment (see
// SignAssignmentRemoval), so the store's current value of a removed name
// says who removed it and when.
type AssignmentRemoval struct {
	Protocol string `json:"protocol"`
	// Name is the assignment removed.
	Name string `json:"name"`
	// Created is when the removal was signed: it must be later than the
	// revision it removes.
	Created time.Time `json:"created"`
	// Sender is the signer's public key; it must equal the store's signer.
	Sender string `json:"sender"`
	// Author names who removed it (user@host), for people.
	Author string `json:"author,omitempty"`
	// Revision is the store revision that was current when it was signed,
	// for people (agents order by Created).
	Revision uint64 `json:"revision,omitempty"`
}

// assignmentRemovalWire is AssignmentRemoval as decoded, created kept raw.
type assignmentRemovalWire struct {
	Protocol string          `json:"protocol"`
	Name     string          `json:"name"`
	Created  json.RawMessage `json:"created"`
	Sender   string          `json:"sender"`
	Author   string          `json:"author"`
	Revision uint64          `json:"revision"`
}

// Validate checks the removal: protocol id, name, created and sender.
func (r *AssignmentRemoval) Validate() error {
	if r.Protocol != AssignmentRemovalProtocol {
		return badRequest("field \"protocol\": expected %q, got %q", AssignmentRemovalProtocol, r.Protocol)
	}
	if err := ValidateAssignmentName(r.Name); err != nil {
		return within("name", err)
	}
	if r.Created.IsZero() {
		return badRequest("field \"created\" is required")
	}
	if !nkeys.IsValidPublicUserKey(r.Sender) {
		return badRequest("field \"sender\": %.60q is not an nkeys user public key", r.Sender)
	}
	return nil
}

// SignAssignmentRemoval encodes r, signs its bytes with kp and returns the
// stored form (a SignedAssignment with Removal set). r.Sender is set to
// kp's public key.
func SignAssignmentRemoval(r *AssignmentRemoval, kp nkeys.KeyPair) ([]byte, error) {
	if kp == nil {
		return nil, signerError("no key")
	}
	pub, err := kp.PublicKey()
	if err != nil {
		return nil, signerCause(err)
	}
	r.Protocol = AssignmentRemovalProtocol
	r.Sender = pub
	if err := r.Validate(); err != nil {
		return nil, err
	}
	data, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("assignment %s removal: %w", r.Name, err)
	}
	signer, sig, err := Sign(data, kp)
	if err != nil {
		return nil, err
	}
	return json.Marshal(&SignedAssignment{Protocol: SignedAssignmentProtocol, Removal: data, Signer: signer, Signature: sig})
}

// DecodeAssignmentRemoval strictly decodes and validates a removal.
func DecodeAssignmentRemoval(data []byte, limits Limits) (*AssignmentRemoval, error) {
	var w assignmentRemovalWire
	if _, err := DecodeStrict(data, &w, limits); err != nil {
		return nil, err
	}
	r := AssignmentRemoval{Protocol: w.Protocol, Name: w.Name, Sender: w.Sender, Author: w.Author, Revision: w.Revision}
	var err error
	if r.Created, err = parseTime("created", w.Created); err != nil {
		return nil, err
	}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return &r, nil
}
