package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nkeys"
)

// Assignment protocol ids, store and history headers.
const (
	// AssignmentProtocol identifies an assignment: a manifest that the
	// agents its selector picks apply on their own, on a schedule.
	AssignmentProtocol = "io.choria.ccm.v1.assignment"
	// SignedAssignmentProtocol identifies the stored form of an
	// assignment: its exact bytes, their signer and signature.
	SignedAssignmentProtocol = "io.choria.ccm.v1.assignment.signed"
	// AssignmentsBucket is the JetStream KV bucket of assignments, keyed
	// by assignment name, keeping past revisions.
	AssignmentsBucket = "CCM_ASSIGNMENTS"
	// AssignmentChangeSubjects is where the assignment bucket republishes
	// every change it stores (ccm.v1.assignments.<name>): agents follow it
	// with a subscription instead of a consumer each. Only the stream
	// publishes there; no user may.
	AssignmentChangeSubjects = "ccm.v1.assignments.>"

	// HeaderAssignment names the assignment a history record ran.
	HeaderAssignment = "Ccm-Assignment"
	// HeaderAssignmentRevision is the assignment's KV revision.
	HeaderAssignmentRevision = "Ccm-Assignment-Revision"
	// HeaderTrigger says why a scheduled run happened (see Trigger*).
	HeaderTrigger = "Ccm-Trigger"
	// HeaderFlapping is set on a watch repair of a file that keeps
	// changing: the backoff before the next repair.
	HeaderFlapping = "Ccm-Flapping"
	// HeaderRequest, on a host record of a run an agent started on its
	// own, is the run's HistoryRequest as compact JSON (without its
	// resources): there is no request record, as an agent may write only
	// its own records.
	HeaderRequest = "Ccm-Request"
)

// Triggers of an assignment run.
const (
	// TriggerChange: the assignment appeared or changed.
	TriggerChange = "change"
	// TriggerSchedule: its interval passed.
	TriggerSchedule = "schedule"
	// TriggerFacts: the host's facts changed.
	TriggerFacts = "facts"
	// TriggerWatch: a watched file changed (watch: true).
	TriggerWatch = "watch"
)

// DiscoveryAssignment is the discovery source of a scheduled run's history
// request record: the agent chose itself by the assignment's selector.
const DiscoveryAssignment = "assignment"

// Assignment bounds.
const (
	// MaxAssignmentNameLength bounds an assignment name.
	MaxAssignmentNameLength = 64
	// MinAssignmentInterval is the shortest interval accepted.
	MinAssignmentInterval = time.Second
	// MaxAssignmentInterval is the longest interval accepted.
	MaxAssignmentInterval = 7 * 24 * time.Hour
	// DefaultAssignmentInterval is the interval when none is given.
	DefaultAssignmentInterval = 30 * time.Minute
)

// Assignment is a manifest that every agent its selector (Filter and
// Targets) picks applies on its own: at once when it appears or changes,
// then every Interval (each host offset by up to Splay), and when the
// host's facts change. With Noop it is a scheduled audit.
type Assignment struct {
	Protocol string `json:"protocol"`
	// Name is the assignment's key in the store; see ValidateAssignmentName.
	Name string `json:"name"`
	// Created is when it was signed.
	Created time.Time `json:"created"`
	// Sender is the signer's public key; it must equal the store's signer.
	Sender string `json:"sender"`
	// Author names who assigned it (user@host), for people.
	Author   string   `json:"author,omitempty"`
	Noop     bool     `json:"noop"`
	Filter   *Filter  `json:"filter"`
	Targets  []string `json:"targets,omitempty"`
	Interval Duration `json:"interval"`
	Splay    Duration `json:"splay,omitempty"`
	// ManifestName is the manifest file it was made from.
	ManifestName string `json:"manifest_name,omitempty"`
	// Manifest is the manifest bundle, as in a fleet request; absent when
	// Bundle names one in an object store instead.
	Manifest json.RawMessage `json:"manifest,omitempty"`
	// Bundle names a signed manifest bundle in a JetStream object store
	// (see AssignmentBundle); exactly one of Manifest and Bundle is set.
	Bundle *AssignmentBundle `json:"bundle,omitempty"`
}

// Assignment bundle bounds.
const (
	// MaxBundleURLLength bounds an assignment bundle's URL.
	MaxBundleURLLength = 1024
)

// AssignmentBundle names one exact manifest bundle in a JetStream object
// store: a gzip tarball holding manifest.yaml and its files, signed as
// `ccm-orch manifest put` signs it. The agent fetches it, checks its
// SHA-256 and signature and judges its signer and resources with its
// policy, as it judges an inline manifest.
type AssignmentBundle struct {
	// URL is obj://bucket/key.
	URL string `json:"url"`
	// SHA256 is the hex SHA-256 of the tarball the assignment was made
	// for: a bundle replaced since is refused.
	SHA256 string `json:"sha256"`
}

// Validate checks the URL's form (obj://bucket/key, bounded, printable)
// and the digest (64 lower-case hex digits).
func (b *AssignmentBundle) Validate() error {
	rest, ok := strings.CutPrefix(b.URL, "obj://")
	bucket, key, _ := strings.Cut(rest, "/")
	switch {
	case !ok || bucket == "" || key == "":
		return fieldError("url", "%.80q must be obj://bucket/key", b.URL)
	case len(b.URL) > MaxBundleURLLength:
		return fieldError("url", "%d characters, the limit is %d", len(b.URL), MaxBundleURLLength)
	case strings.ContainsFunc(b.URL, func(r rune) bool { return r < 0x21 || r == 0x7f }):
		return fieldError("url", "%.80q contains spaces or control characters", b.URL)
	}
	if len(b.SHA256) != 64 || strings.Trim(b.SHA256, "0123456789abcdef") != "" {
		return fieldError("sha256", "%.80q must be 64 lower-case hex digits", b.SHA256)
	}
	return nil
}

// assignmentWire is Assignment as decoded, created kept raw; it lists
// every field of Assignment.
type assignmentWire struct {
	Protocol     string            `json:"protocol"`
	Name         string            `json:"name"`
	Created      json.RawMessage   `json:"created"`
	Sender       string            `json:"sender"`
	Author       string            `json:"author"`
	Noop         bool              `json:"noop"`
	Filter       *Filter           `json:"filter"`
	Targets      []string          `json:"targets"`
	Interval     Duration          `json:"interval"`
	Splay        Duration          `json:"splay"`
	ManifestName string            `json:"manifest_name"`
	Manifest     json.RawMessage   `json:"manifest"`
	Bundle       *AssignmentBundle `json:"bundle"`
}

// ValidateAssignmentName checks an assignment name: 1 to 64 ASCII letters,
// digits, '_' and '-', starting with a letter or digit, so it is a KV key
// and a subject token as it is.
func ValidateAssignmentName(name string) error {
	switch {
	case name == "":
		return badRequest("assignment name must not be empty")
	case len(name) > MaxAssignmentNameLength:
		return badRequest("assignment name %.70q is %d characters long, the limit is %d", name, len(name), MaxAssignmentNameLength)
	case !isLetter(name[0]) && !isDigit(name[0]):
		return badRequest("assignment name %q must start with a letter or a digit", name)
	}
	for i := 0; i < len(name); i++ {
		if b := name[i]; !isLetter(b) && !isDigit(b) && b != '_' && b != '-' {
			return badRequest("assignment name %q: character at position %d is not allowed: use letters, digits, '_' and '-'", name, i)
		}
	}
	return nil
}

// Validate checks the assignment: protocol id, name, created, sender, an
// interval between MinAssignmentInterval and MaxAssignmentInterval, a
// splay not longer than the interval, targets, a filter that compiles and
// a manifest object.
func (a *Assignment) Validate() error {
	if a.Protocol != AssignmentProtocol {
		return badRequest("field \"protocol\": expected %q, got %q", AssignmentProtocol, a.Protocol)
	}
	if err := ValidateAssignmentName(a.Name); err != nil {
		return within("name", err)
	}
	if a.Created.IsZero() {
		return badRequest("field \"created\" is required")
	}
	if !nkeys.IsValidPublicUserKey(a.Sender) {
		return badRequest("field \"sender\": %.60q is not an nkeys user public key", a.Sender)
	}
	switch iv, sp := time.Duration(a.Interval), time.Duration(a.Splay); {
	case iv < MinAssignmentInterval || iv > MaxAssignmentInterval:
		return badRequest("field \"interval\": %s is not between %s and %s", iv, MinAssignmentInterval, MaxAssignmentInterval)
	case sp < 0 || sp > iv:
		return badRequest("field \"splay\": %s must be between 0 and the interval %s", sp, iv)
	}
	if len(a.Targets) > MaxTargets {
		return badRequest("field \"targets\": %d identities, the limit is %d", len(a.Targets), MaxTargets)
	}
	for i, id := range a.Targets {
		if err := ValidateIdentity(id); err != nil {
			return within(fmt.Sprintf("targets[%d]", i), err)
		}
	}
	if err := a.Filter.Compile(); err != nil {
		return within("filter", err)
	}
	if a.Bundle != nil {
		if trimmed := bytes.TrimSpace(a.Manifest); len(trimmed) > 0 && !bytes.Equal(trimmed, []byte("null")) {
			return badRequest("fields \"manifest\" and \"bundle\" cannot both be set")
		}
		if err := a.Bundle.Validate(); err != nil {
			return within("bundle", err)
		}
		return nil
	}
	if trimmed := bytes.TrimLeft(a.Manifest, " \t\r\n"); len(trimmed) == 0 || trimmed[0] != '{' {
		return badRequest("field \"manifest\" must be an object (or \"bundle\" must name one)")
	}
	return nil
}

// Selects reports whether the assignment applies to the host with
// identity and facts: its targets (when any) list it and its filter
// (when any) matches.
func (a *Assignment) Selects(identity string, facts map[string]any) bool {
	if len(a.Targets) > 0 {
		found := false
		for _, t := range a.Targets {
			if t == identity {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return a.Filter == nil || a.Filter.Match(facts)
}

// DecodeAssignment strictly decodes and validates an assignment.
func DecodeAssignment(data []byte, limits Limits) (*Assignment, error) {
	var w assignmentWire
	if _, err := DecodeStrict(data, &w, limits); err != nil {
		return nil, err
	}
	a := Assignment{
		Protocol: w.Protocol, Name: w.Name, Sender: w.Sender, Author: w.Author, Noop: w.Noop,
		Filter: w.Filter, Targets: w.Targets, Interval: w.Interval, Splay: w.Splay,
		ManifestName: w.ManifestName, Manifest: w.Manifest, Bundle: w.Bundle,
	}
	var err error
	if a.Created, err = parseTime("created", w.Created); err != nil {
		return nil, err
	}
	if err := a.Validate(); err != nil {
		return nil, err
	}
	return &a, nil
}

// SignedAssignment is an assignment as stored: the exact bytes that were
// signed, the signer's public key and the signature (see Sign). Agents
// verify the signature over Assignment before decoding it.
//
// A removal (a tombstone) is stored in the same form with Removal set
// instead of Assignment: exactly one of them is present, and the signature
// is over that one's bytes.
type SignedAssignment struct {
	Protocol   string `json:"protocol"`
	Assignment []byte `json:"assignment,omitempty"`
	Removal    []byte `json:"removal,omitempty"`
	Signer     string `json:"signer"`
	Signature  string `json:"signature"`
}

// Signed returns the signed bytes: the removal's for a tombstone, the
// assignment's otherwise.
func (s *SignedAssignment) Signed() []byte {
	if len(s.Removal) > 0 {
		return s.Removal
	}
	return s.Assignment
}

// SignAssignment encodes a, signs its bytes with kp and returns the stored
// form. a.Sender is set to kp's public key.
func SignAssignment(a *Assignment, kp nkeys.KeyPair) ([]byte, error) {
	pub, err := kp.PublicKey()
	if err != nil {
		return nil, signerCause(err)
	}
	a.Protocol = AssignmentProtocol
	a.Sender = pub
	if err := a.Validate(); err != nil {
		return nil, err
	}
	data, err := json.Marshal(a)
	if err != nil {
		return nil, fmt.Errorf("assignment %s: %w", a.Name, err)
	}
	signer, sig, err := Sign(data, kp)
	if err != nil {
		return nil, err
	}
	return json.Marshal(&SignedAssignment{Protocol: SignedAssignmentProtocol, Assignment: data, Signer: signer, Signature: sig})
}

// DecodeSignedAssignment strictly decodes the stored form, without
// verifying the signature or decoding the assignment.
func DecodeSignedAssignment(data []byte, limits Limits) (*SignedAssignment, error) {
	var s SignedAssignment
	if _, err := DecodeStrict(data, &s, limits); err != nil {
		return nil, err
	}
	switch {
	case s.Protocol != SignedAssignmentProtocol:
		return nil, badRequest("field \"protocol\": expected %q, got %q", SignedAssignmentProtocol, s.Protocol)
	case len(s.Assignment) == 0 && len(s.Removal) == 0:
		return nil, badRequest("field \"assignment\" (or \"removal\", for a removal) is required")
	case len(s.Assignment) > 0 && len(s.Removal) > 0:
		return nil, badRequest("fields \"assignment\" and \"removal\" cannot both be set")
	}
	return &s, nil
}
