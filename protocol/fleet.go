package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nkeys"
)

// Fleet protocol ids.
const (
	// FleetRequestProtocol identifies a request sent to many agents.
	FleetRequestProtocol = "io.choria.ccm.v1.fleet.request"
	// FleetReplyProtocol identifies one agent's answer to a fleet request.
	FleetReplyProtocol = "io.choria.ccm.v1.fleet.reply"
)

// Fleet request bounds.
const (
	// MaxFleetTTL is the longest lifetime a fleet request may ask for.
	MaxFleetTTL = 24 * time.Hour
	// MaxTargets is the most exact identities a fleet request may list.
	MaxTargets = 10000
	// MaxExpected is the most hosts one run may expect (discovered by a
	// filter, not listed): what its history request record may hold.
	MaxExpected = 100000
	// MaxRequestIDLength is the longest request id accepted.
	MaxRequestIDLength = 128
)

// FleetRequest asks every agent selected by Filter (and, when set, listed in
// Targets) to apply one resource (Ensure) or a manifest (Manifest).
type FleetRequest struct {
	Protocol string `json:"protocol"`
	// ID names the request in replies and history; see ValidateRequestID.
	ID string `json:"id"`
	// Created is when the orchestrator made the request.
	Created time.Time `json:"created"`
	// TTL is how long after Created an agent may still start the request;
	// 0 (omitted) means the agent's default_ttl.
	TTL Duration `json:"ttl,omitempty"`
	// Noop asks for a dry run: report what would change, change nothing.
	Noop bool `json:"noop"`
	// Filter is the parsed --where and --host terms; nil selects every agent.
	Filter *Filter `json:"filter"`
	// Targets, when not empty, are the only identities that may act.
	Targets []string `json:"targets,omitempty"`
	// Ensure is a single-resource body.
	Ensure *EnsureRequest `json:"ensure,omitempty"`
	// Manifest is a whole-manifest body, a JSON object.
	Manifest json.RawMessage `json:"manifest,omitempty"`
	// Sender is the public key (nkeys user key) of who signed the request;
	// it must equal the HeaderSigner of the message. Empty when unsigned.
	Sender string `json:"sender,omitempty"`
	// Reply is the subject the agent must answer to, bound into the
	// signature; empty for requests sent without waiting for replies.
	Reply string `json:"reply,omitempty"`
}

// NewFleetRequest starts a request with the protocol id, id, creation time
// (in UTC) and lifetime set; the caller adds Filter, Targets and one body.
func NewFleetRequest(id string, created time.Time, ttl time.Duration) *FleetRequest {
	return &FleetRequest{Protocol: FleetRequestProtocol, ID: id, Created: created.UTC(), TTL: Duration(ttl)}
}

// DecodeFleetRequest strictly decodes a JSON or YAML fleet request and
// validates it (see Validate), compiling its filter. Errors wrap
// ErrBadRequest and name the field.
func DecodeFleetRequest(data []byte, limits Limits) (*FleetRequest, error) {
	req, _, err := DecodeFleetRequestClaim(data, limits)
	return req, err
}

// DecodeFleetRequestClaim is DecodeFleetRequest that also returns, when
// the request is refused, the id it claims as far as the one decode read
// it: the id member when it came before the fault and is a valid request
// id, "" otherwise. A refusal can then be matched by its sender without
// the bytes being parsed a second time, with other rules.
func DecodeFleetRequestClaim(data []byte, limits Limits) (req *FleetRequest, claimed string, err error) {
	var wire fleetRequestWire
	req, err = decodeFleetRequest(data, limits, &wire)
	if err == nil {
		return req, req.ID, nil
	}
	if ValidateRequestID(wire.ID) == nil {
		claimed = wire.ID
	}
	return nil, claimed, err
}

// decodeFleetRequest decodes data into wire, then the request.
func decodeFleetRequest(data []byte, limits Limits, wire *fleetRequestWire) (*FleetRequest, error) {
	if _, err := DecodeStrict(data, wire, limits); err != nil {
		return nil, err
	}
	req := FleetRequest{
		Protocol: wire.Protocol,
		ID:       wire.ID,
		Noop:     wire.Noop,
		Filter:   wire.Filter,
		Targets:  wire.Targets,
		Ensure:   wire.Ensure,
		Manifest: wire.Manifest,
		Sender:   wire.Sender,
		Reply:    wire.Reply,
	}
	var err error
	if req.Created, err = parseTime("created", wire.Created); err != nil {
		return nil, err
	}
	// An absent ttl (0) asks for the receiver's default; a given one must
	// be positive.
	if len(wire.TTL) > 0 && string(wire.TTL) != "null" {
		ttl, err := parseDuration(wire.TTL)
		if err != nil {
			return nil, badRequest("field \"ttl\": %s", err)
		}
		if ttl <= 0 {
			return nil, badRequest("field \"ttl\": must be positive, got %s", ttl)
		}
		req.TTL = Duration(ttl)
	}
	if err := req.Validate(); err != nil {
		return nil, err
	}
	return &req, nil
}

// Validate checks the request: protocol id, id, created, 0 <= ttl <= 24h
// (0: the receiver applies its default),
// exactly one of ensure and manifest, at most MaxTargets valid identities in
// targets, and a filter that compiles (Validate caches the compiled filter).
func (r *FleetRequest) Validate() error {
	if r.Protocol != FleetRequestProtocol {
		return badRequest("field \"protocol\": expected %q, got %q", FleetRequestProtocol, r.Protocol)
	}
	if err := ValidateRequestID(r.ID); err != nil {
		return within("id", err)
	}
	if r.Created.IsZero() {
		return badRequest("field \"created\" is required")
	}
	switch ttl := time.Duration(r.TTL); {
	case ttl < 0:
		return badRequest("field \"ttl\": must be positive, got %s", ttl)
	case ttl > MaxFleetTTL:
		return badRequest("field \"ttl\": %s is longer than the limit of %s", ttl, MaxFleetTTL)
	}
	hasManifest := len(r.Manifest) > 0 && string(r.Manifest) != "null"
	switch {
	case r.Ensure != nil && hasManifest:
		return badRequest("fields \"ensure\" and \"manifest\": send one, not both")
	case r.Ensure == nil && !hasManifest:
		return badRequest("field \"ensure\" or \"manifest\" is required")
	case r.Ensure != nil:
		if err := r.Ensure.Validate(); err != nil {
			return within("ensure", err)
		}
	default:
		if trimmed := bytes.TrimLeft(r.Manifest, " \t\r\n"); len(trimmed) == 0 || trimmed[0] != '{' {
			return badRequest("field \"manifest\" must be an object")
		}
	}
	if len(r.Targets) > MaxTargets {
		return badRequest("field \"targets\": %d identities, the limit is %d", len(r.Targets), MaxTargets)
	}
	for i, id := range r.Targets {
		if err := ValidateIdentity(id); err != nil {
			return within(fmt.Sprintf("targets[%d]", i), err)
		}
	}
	if err := r.Filter.Compile(); err != nil {
		return within("filter", err)
	}
	if r.Sender != "" && !nkeys.IsValidPublicUserKey(r.Sender) {
		return badRequest("field \"sender\": %.60q is not an nkeys user public key", r.Sender)
	}
	if len(r.Reply) > MaxReplySubjectLength {
		return badRequest("field \"reply\": %d characters, the limit is %d", len(r.Reply), MaxReplySubjectLength)
	}
	return nil
}

// MaxReplySubjectLength bounds a request's reply subject.
const MaxReplySubjectLength = 256

// Deadline is the last moment an agent may start the request, Created+TTL.
func (r *FleetRequest) Deadline() time.Time {
	return r.Created.Add(time.Duration(r.TTL))
}

// Expired reports whether now is past the request's deadline.
func (r *FleetRequest) Expired(now time.Time) bool {
	return now.After(r.Deadline())
}

// Targeted reports whether identity may act on the request: true when
// Targets is empty or lists it.
func (r *FleetRequest) Targeted(identity string) bool {
	if len(r.Targets) == 0 {
		return true
	}
	for _, t := range r.Targets {
		if t == identity {
			return true
		}
	}
	return false
}

// ValidateRequestID checks a request id: 1 to 128 ASCII letters, digits,
// '_' and '-', so it is one subject token as it is.
func ValidateRequestID(id string) error {
	switch {
	case id == "":
		return badRequest("request id must not be empty")
	case len(id) > MaxRequestIDLength:
		return badRequest("request id is %d characters long, the limit is %d", len(id), MaxRequestIDLength)
	}
	for i := 0; i < len(id); i++ {
		if b := id[i]; !isLetter(b) && !isDigit(b) && b != '_' && b != '-' {
			return badRequest("request id %q: character at position %d is not allowed: use letters, digits, '_' and '-'", id, i)
		}
	}
	return nil
}

// FleetReply is one agent's answer to a fleet request: the transaction
// events of the resources it applied, or a request-level Error (bad_request,
// expired, busy, forbidden, ...) when it did not run the request.
type FleetReply struct {
	Protocol  string    `json:"protocol"`
	RequestID string    `json:"request_id"`
	Identity  string    `json:"identity"`
	Started   time.Time `json:"started"`
	// Duration is how long the agent took, in integer nanoseconds.
	Duration time.Duration       `json:"duration"`
	Events   []*TransactionEvent `json:"events"`
	Error    *Error              `json:"error,omitempty"`
}

// NewFleetReply starts identity's reply to requestID, begun at started (kept
// in UTC), with an empty event list.
func NewFleetReply(requestID, identity string, started time.Time) *FleetReply {
	return &FleetReply{
		Protocol:  FleetReplyProtocol,
		RequestID: requestID,
		Identity:  identity,
		Started:   started.UTC(),
		Events:    []*TransactionEvent{},
	}
}

// MarshalJSON keeps events as [] rather than null.
func (r FleetReply) MarshalJSON() ([]byte, error) { return r.Encode() }

// fleetReplyJSON is FleetReply as encoded, with events that have no JSON
// methods (see eventJSON). It must list every field of FleetReply.
type fleetReplyJSON struct {
	Protocol  string        `json:"protocol"`
	RequestID string        `json:"request_id"`
	Identity  string        `json:"identity"`
	Started   time.Time     `json:"started"`
	Duration  time.Duration `json:"duration"`
	Events    []*eventJSON  `json:"events"`
	Error     *Error        `json:"error,omitempty"`
}

// Encode returns the reply's JSON document, what json.Marshal gives for it,
// without encoding/json's second pass over the output of MarshalJSON
// methods: agents encode every reply with it.
func (r *FleetReply) Encode() ([]byte, error) {
	encodes.Add(1)
	w := fleetReplyJSON{
		Protocol: r.Protocol, RequestID: r.RequestID, Identity: r.Identity, Started: r.Started,
		Duration: r.Duration, Events: make([]*eventJSON, len(r.Events)), Error: r.Error,
	}
	for i, ev := range r.Events {
		w.Events[i] = ev.wire()
	}
	return json.Marshal(&w)
}

// DecodeFleetReply strictly decodes a fleet reply and checks its protocol
// id, request id, identity, duration and error code.
func DecodeFleetReply(data []byte, limits Limits) (*FleetReply, error) {
	var wire fleetReplyWire
	if err := decodeTopStrict(data, &wire, limits); err != nil {
		return nil, err
	}
	r := FleetReply{
		Protocol:  wire.Protocol,
		RequestID: wire.RequestID,
		Identity:  wire.Identity,
		Duration:  wire.Duration,
		Error:     wire.Error,
	}
	var err error
	if r.Started, err = parseTime("started", wire.Started); err != nil {
		return nil, err
	}
	if r.Events, err = decodeEvents(wire.Events); err != nil {
		return nil, err
	}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return &r, nil
}

// decodeEvents turns a reply's decoded events into TransactionEvents,
// decoding each status (a null event stays nil, for Validate to refuse).
func decodeEvents(decoded []*eventDecode) ([]*TransactionEvent, error) {
	if decoded == nil {
		return nil, nil
	}
	events := make([]*TransactionEvent, len(decoded))
	for i, d := range decoded {
		if d == nil {
			continue
		}
		ev, err := d.event()
		if err != nil {
			return nil, within(fmt.Sprintf("events[%d]", i), err)
		}
		events[i] = ev
	}
	return events, nil
}

// Validate checks the reply's envelope.
func (r *FleetReply) Validate() error {
	if r.Protocol != FleetReplyProtocol {
		return badRequest("field \"protocol\": expected %q, got %q", FleetReplyProtocol, r.Protocol)
	}
	if err := ValidateRequestID(r.RequestID); err != nil {
		return within("request_id", err)
	}
	if err := ValidateIdentity(r.Identity); err != nil {
		return within("identity", err)
	}
	if r.Duration < 0 {
		return badRequest("field \"duration\": must not be negative, got %s", r.Duration)
	}
	if r.Error != nil && r.Error.Code == "" {
		return badRequest("field \"error\": code is required")
	}
	for i, ev := range r.Events {
		if ev == nil {
			return badRequest("field \"events\" item %d: null", i)
		}
	}
	return nil
}

// Duration is a time.Duration written in JSON as a Go duration string
// ("30s", "1m30s"); decoding also accepts integer nanoseconds.
type Duration time.Duration

// String formats the duration like time.Duration.
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalJSON writes the duration as a string such as "30s".
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads a duration string ("30s") or integer nanoseconds.
func (d *Duration) UnmarshalJSON(data []byte) error {
	v, err := parseDuration(data)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

func parseDuration(data []byte) (time.Duration, error) {
	data = bytes.TrimSpace(data)
	if len(data) > 0 && data[0] == '"' {
		var s string
		if err := json.Unmarshal(data, &s); err != nil {
			return 0, fmt.Errorf("invalid duration %s", data)
		}
		v, err := time.ParseDuration(s)
		if err != nil {
			return 0, fmt.Errorf("invalid duration %q: use a number with a unit such as \"30s\" or \"5m\"", s)
		}
		return v, nil
	}
	v, err := strconv.ParseInt(string(data), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("expected a duration such as \"30s\" or integer nanoseconds, got %.40s", data)
	}
	return time.Duration(v), nil
}

// fleetRequestWire is FleetRequest as decoded: created and ttl stay raw so
// that their errors name the field (encoding/json does not for errors of a
// type's own UnmarshalJSON). It must list every field of FleetRequest; the
// round-trip tests fail when one is missing.
type fleetRequestWire struct {
	Protocol string          `json:"protocol"`
	ID       string          `json:"id"`
	Created  json.RawMessage `json:"created"`
	TTL      json.RawMessage `json:"ttl"`
	Noop     bool            `json:"noop"`
	Filter   *Filter         `json:"filter"`
	Targets  []string        `json:"targets"`
	Ensure   *EnsureRequest  `json:"ensure"`
	Manifest json.RawMessage `json:"manifest"`
	Sender   string          `json:"sender"`
	Reply    string          `json:"reply"`
}

// fleetReplyWire is FleetReply as decoded, started kept raw; it must list
// every field of FleetReply.
type fleetReplyWire struct {
	Protocol  string          `json:"protocol"`
	RequestID string          `json:"request_id"`
	Identity  string          `json:"identity"`
	Started   json.RawMessage `json:"started"`
	Duration  time.Duration   `json:"duration"`
	Events    []*eventDecode  `json:"events"`
	Error     *Error          `json:"error"`
}

// parseTime decodes an optional RFC 3339 time of the named field; absent or
// null gives the zero time.
func parseTime(field string, data json.RawMessage) (time.Time, error) {
	var t time.Time
	if len(data) == 0 || string(data) == "null" {
		return t, nil
	}
	if err := json.Unmarshal(data, &t); err != nil {
		return t, badRequest("field %q: expected an RFC 3339 time such as \"2025-01-02T15:04:05Z\", got %.60s", field, data)
	}
	return t, nil
}
