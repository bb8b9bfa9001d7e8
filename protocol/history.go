package protocol

import (
	"fmt"
	"time"
)

// History record protocol ids and headers. A host's record in the history
// stream is the fleet reply it sent, byte for byte, with the timing headers
// below; the request's own record is a HistoryRequest.
const (
	// HistoryRequestProtocol identifies the record of a request, kept at
	// ccm.v1.history.<request_id>._request.
	HistoryRequestProtocol = "io.choria.ccm.v1.fleet.history.request"

	// HeaderReceived is the header of a host record giving when the agent
	// received the request (RFC 3339 with nanoseconds, the agent's clock).
	HeaderReceived = "Ccm-Received"
	// HeaderReplied is the header of a host record giving when the agent
	// sent its reply (RFC 3339 with nanoseconds, the agent's clock). Both
	// headers come from one clock, so their difference is exact even when
	// the agent's clock is off.
	HeaderReplied = "Ccm-Replied"
)

// Discovery sources a history request and a run result name.
const (
	// DiscoveryHosts: the expected set was given as exact identities.
	DiscoveryHosts = "hosts"
	// DiscoveryRegistry: the expected set was read from the node registry.
	DiscoveryRegistry = "registry"
	// DiscoveryBroadcast: the expected set is who answered a broadcast.
	DiscoveryBroadcast = "broadcast"
)

// HistoryResource is a resource as a request declared it (templates
// unexpanded), kept so the grouping of a run can be rebuilt.
type HistoryResource struct {
	Type string `json:"type"`
	Name string `json:"name"`
}

// HistoryRequest is the record of one fleet request: what was asked, of
// whom, by whom and when, with the expected set and the reply deadline, so
// the run's report can be rebuilt from history alone.
type HistoryRequest struct {
	Protocol  string    `json:"protocol"`
	RequestID string    `json:"request_id"`
	Created   time.Time `json:"created"`
	// Sender names who sent the request (user@host by default).
	Sender string  `json:"sender,omitempty"`
	Noop   bool    `json:"noop"`
	Filter *Filter `json:"filter"`
	// Discovery is how the expected set was found: DiscoveryHosts,
	// DiscoveryRegistry or DiscoveryBroadcast.
	Discovery string   `json:"discovery"`
	Expected  []string `json:"expected"`
	// Timeout is how long each host had to reply once asked.
	Timeout Duration `json:"timeout"`
	TTL     Duration `json:"ttl"`
	// Batch is the sliding window size of a batched run, 0 for a whole run.
	Batch int `json:"batch,omitempty"`
	// Async is set when the sender did not wait for the replies.
	Async bool `json:"async,omitempty"`
	// Ensure is the resource of an ensure request.
	Ensure *EnsureRequest `json:"ensure,omitempty"`
	// Manifest names the manifest file of an apply or audit request.
	Manifest string `json:"manifest,omitempty"`
	// Resources are the resources a manifest declares, in order.
	Resources []HistoryResource `json:"resources,omitempty"`
	// Assignment, Revision and Trigger mark a run an agent started on its
	// own for an assignment (Discovery is DiscoveryAssignment).
	Assignment string `json:"assignment,omitempty"`
	Revision   uint64 `json:"revision,omitempty"`
	Trigger    string `json:"trigger,omitempty"`
	// Sample says how the expected hosts were sampled (--sample), with
	// the seed that picks them again; absent when they were not.
	Sample *Sample `json:"sample,omitempty"`
	// Listed counts the identities a host list (--hosts-file,
	// --hosts-from) allowed, when one narrowed the run.
	Listed int `json:"listed,omitempty"`
	// TemplateFacts are the fact paths the request's templates name, so
	// that diffs read back from history group across hosts as they did
	// live; absent in records written before diffs.
	TemplateFacts []string `json:"template_facts,omitempty"`
}

// Sample says how a run's hosts were sampled, so that the run can be
// repeated with the same seed.
type Sample struct {
	// Seed is the seed the sample was chosen with (--seed).
	Seed uint64 `json:"seed"`
	// Of counts the hosts sampled from.
	Of int `json:"of"`
	// Kept counts the hosts kept.
	Kept int `json:"kept"`
}

// DecodeHistoryRequest strictly decodes a request record and checks its
// protocol id, request id and expected identities.
func DecodeHistoryRequest(data []byte, limits Limits) (*HistoryRequest, error) {
	var r HistoryRequest
	if _, err := DecodeStrict(data, &r, limits); err != nil {
		return nil, err
	}
	if r.Protocol != HistoryRequestProtocol {
		return nil, badRequest("field \"protocol\": expected %q, got %q", HistoryRequestProtocol, r.Protocol)
	}
	if err := ValidateRequestID(r.RequestID); err != nil {
		return nil, within("request_id", err)
	}
	if len(r.Expected) > MaxExpected {
		return nil, badRequest("field \"expected\": %d identities, the limit is %d", len(r.Expected), MaxExpected)
	}
	for i, id := range r.Expected {
		if err := ValidateIdentity(id); err != nil {
			return nil, within(fmt.Sprintf("expected[%d]", i), err)
		}
	}
	if err := r.Filter.Compile(); err != nil {
		return nil, within("filter", err)
	}
	return &r, nil
}

// HistoryMsgID is the JetStream message id of a record: "<request_id>/<identity>"
// for a host, "<request_id>/_request" for the request, so a retried write
// is recognised as already recorded.
func HistoryMsgID(requestID, identity string) string {
	if identity == "" {
		identity = HistoryRequestToken
	}
	return requestID + "/" + identity
}

// FormatHeaderTime writes a timing header value.
func FormatHeaderTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// ParseHeaderTime reads a timing header value; the zero time when absent or
// invalid.
func ParseHeaderTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t
}
