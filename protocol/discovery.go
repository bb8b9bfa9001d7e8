package protocol

import (
	"time"

	"github.com/nats-io/nkeys"
)

// Discovery protocol ids.
const (
	// DiscoveryRequestProtocol identifies a broadcast asking matching agents
	// to announce themselves.
	DiscoveryRequestProtocol = "io.choria.ccm.v1.fleet.discovery.request"
	// DiscoveryReplyProtocol identifies one agent's announcement.
	DiscoveryReplyProtocol = "io.choria.ccm.v1.fleet.discovery.reply"
)

// MaxDiscoveryFacts bounds how many facts an announcement carries.
const MaxDiscoveryFacts = 256

// MaxDiscoveryFactPaths bounds how many facts a discovery request asks
// agents to add to their announcements (DiscoveryRequest.Facts).
const MaxDiscoveryFactPaths = 16

// DiscoveryRequest is published on a ccm.v1.disc.* subject with a reply
// subject; agents whose facts match Filter answer with a DiscoveryReply.
type DiscoveryRequest struct {
	Protocol string  `json:"protocol"`
	ID       string  `json:"id"`
	Filter   *Filter `json:"filter,omitempty"`
	// Facts, when not empty, are facts (dotted paths into nested facts,
	// as in filters) each answering agent adds to its announcement's
	// facts under the path as written, when it has them: the nested
	// facts announcements otherwise leave out. At most
	// MaxDiscoveryFactPaths. Omitted when empty, so that a request without
	// it is what older agents read (they refuse one carrying it).
	Facts []string `json:"facts,omitempty"`
}

// NewDiscoveryRequest builds a discovery request for filter (nil: everyone).
func NewDiscoveryRequest(id string, filter *Filter) *DiscoveryRequest {
	return &DiscoveryRequest{Protocol: DiscoveryRequestProtocol, ID: id, Filter: filter}
}

// DecodeDiscoveryRequest strictly decodes and validates a discovery request,
// compiling its filter.
func DecodeDiscoveryRequest(data []byte, limits Limits) (*DiscoveryRequest, error) {
	var r DiscoveryRequest
	if _, err := DecodeStrict(data, &r, limits); err != nil {
		return nil, err
	}
	if r.Protocol != DiscoveryRequestProtocol {
		return nil, badRequest("field \"protocol\": expected %q, got %q", DiscoveryRequestProtocol, r.Protocol)
	}
	if err := ValidateRequestID(r.ID); err != nil {
		return nil, within("id", err)
	}
	if r.Filter != nil {
		if err := r.Filter.Compile(); err != nil {
			return nil, err
		}
	}
	if err := CheckDiscoveryFacts(r.Facts); err != nil {
		return nil, err
	}
	return &r, nil
}

// CheckDiscoveryFacts checks the facts a discovery request asks for: at
// most MaxDiscoveryFactPaths, each a valid fact name (CheckFactKey).
func CheckDiscoveryFacts(paths []string) error {
	if len(paths) > MaxDiscoveryFactPaths {
		return badRequest("field \"facts\": %d facts, at most %d are accepted", len(paths), MaxDiscoveryFactPaths)
	}
	for _, p := range paths {
		if err := CheckFactKey(p); err != nil {
			return within("facts", err)
		}
	}
	return nil
}

// AnnouncedFacts returns the facts an announcement carries in answer to
// req: scalar (see ScalarFacts), plus each fact req.Facts asks for that
// all has, under its path as written. scalar is not changed.
func AnnouncedFacts(req *DiscoveryRequest, scalar, all map[string]any) map[string]any {
	if len(req.Facts) == 0 {
		return scalar
	}
	out := make(map[string]any, len(scalar)+len(req.Facts))
	for k, v := range scalar {
		out[k] = v
	}
	for _, p := range req.Facts {
		if v, ok := LookupFact(all, p); ok {
			out[p] = v
		}
	}
	return out
}

// DiscoveryReply announces one agent: its identity, its flat scalar facts
// and its version.
type DiscoveryReply struct {
	Protocol  string         `json:"protocol"`
	RequestID string         `json:"request_id"`
	Identity  string         `json:"identity"`
	Facts     map[string]any `json:"facts"`
	Version   string         `json:"version,omitempty"`
	// PublicKey is the agent's nkeys user public key, with which it signs
	// its replies; empty for agents that do not sign.
	PublicKey string    `json:"public_key,omitempty"`
	Started   time.Time `json:"started"`
}

// DecodeDiscoveryReply strictly decodes and validates an announcement.
func DecodeDiscoveryReply(data []byte, limits Limits) (*DiscoveryReply, error) {
	var r DiscoveryReply
	if _, err := DecodeStrict(data, &r, limits); err != nil {
		return nil, err
	}
	if r.Protocol != DiscoveryReplyProtocol {
		return nil, badRequest("field \"protocol\": expected %q, got %q", DiscoveryReplyProtocol, r.Protocol)
	}
	if err := ValidateIdentity(r.Identity); err != nil {
		return nil, within("identity", err)
	}
	if len(r.Facts) > MaxDiscoveryFacts+MaxDiscoveryFactPaths {
		return nil, badRequest("field \"facts\": more than %d facts", MaxDiscoveryFacts+MaxDiscoveryFactPaths)
	}
	if r.PublicKey != "" && !nkeys.IsValidPublicUserKey(r.PublicKey) {
		return nil, badRequest("field \"public_key\": not an nkeys user public key")
	}
	return &r, nil
}

// ScalarFacts returns the top-level facts whose values are strings, numbers
// or booleans (at most MaxDiscoveryFacts), the part of a host's facts worth
// announcing and filtering on without the nested details.
func ScalarFacts(facts map[string]any) map[string]any {
	out := make(map[string]any, len(facts))
	for k, v := range facts {
		if len(out) >= MaxDiscoveryFacts {
			break
		}
		switch v.(type) {
		case string, bool, int, int64, uint64, float64, float32, int32:
			out[k] = v
		}
	}
	return out
}
