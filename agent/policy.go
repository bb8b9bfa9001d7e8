package agent

import "github.com/ccm-fleet/ccm/trust/policy"

// The agent's policy is package policy's; these names keep the agent's
// API in one import.
type (
	// Policy says which signed requests the agent executes (policy.Policy).
	Policy = policy.Policy
	// Signer is one trusted key and what it may do (policy.Signer).
	Signer = policy.Signer
	// policyResource is one resource of a request as the policy sees it.
	policyResource = policy.Resource
)

// ErrPolicy is wrapped by every error loading or validating a policy.
var ErrPolicy = policy.ErrPolicy

// Policy bounds (see package policy).
const (
	DefaultMaxClockSkew = policy.DefaultMaxClockSkew
	MaxMaxClockSkew     = policy.MaxMaxClockSkew
	MaxSigners          = policy.MaxSigners
	MaxPolicyBytes      = policy.MaxPolicyBytes
)

// LoadPolicy reads and validates a policy file (policy.LoadPolicy).
func LoadPolicy(path string) (*Policy, error) { return policy.LoadPolicy(path) }

// ParsePolicy strictly decodes and validates a policy (policy.ParsePolicy).
func ParsePolicy(data []byte) (*Policy, error) { return policy.ParsePolicy(data) }
