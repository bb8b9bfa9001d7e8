package protocol

import (
	"time"

	"github.com/nats-io/nkeys"
)

// NodeProtocol identifies a node registry entry, the value of key
// <identity> in the KV bucket NodesBucket.
const NodeProtocol = "io.choria.ccm.v1.fleet.node"

// NodeRecord is one agent's entry in the node registry: its identity, its
// flat scalar facts (those announcements carry, see ScalarFacts), its
// version, when it started and when it last refreshed the entry.
type NodeRecord struct {
	Protocol string         `json:"protocol"`
	Identity string         `json:"identity"`
	Facts    map[string]any `json:"facts"`
	Version  string         `json:"version,omitempty"`
	// PublicKey is the agent's nkeys user public key, with which it signs
	// its replies; empty for agents that do not sign.
	PublicKey string    `json:"public_key,omitempty"`
	Started   time.Time `json:"started"`
	LastSeen  time.Time `json:"last_seen"`
}

// DecodeNodeRecord strictly decodes and validates a registry entry.
func DecodeNodeRecord(data []byte, limits Limits) (*NodeRecord, error) {
	var r NodeRecord
	if _, err := DecodeStrict(data, &r, limits); err != nil {
		return nil, err
	}
	if r.Protocol != NodeProtocol {
		return nil, badRequest("field \"protocol\": expected %q, got %q", NodeProtocol, r.Protocol)
	}
	if err := ValidateIdentity(r.Identity); err != nil {
		return nil, within("identity", err)
	}
	if r.PublicKey != "" && !nkeys.IsValidPublicUserKey(r.PublicKey) {
		return nil, badRequest("field \"public_key\": not an nkeys user public key")
	}
	if len(r.Facts) > MaxDiscoveryFacts+1 {
		return nil, badRequest("field \"facts\": more than %d facts", MaxDiscoveryFacts)
	}
	return &r, nil
}
