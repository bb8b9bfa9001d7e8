// Package policy is an agent's policy: which signers it trusts and what
// each may ask for (resource types, the shell provider, noop only, and the
// scopes of package scope), loaded strictly from YAML or JSON. It also
// parses what a request asks for (ParseBody) the one way the agent and the
// offline check both use, and judges a request or manifest offline as an
// agent with given facts would (CheckOffline, behind ccm-orch policy
// check).
//
// It imports neither the agent nor the resource providers, so ccm-orch
// can check policies without linking them.
package policy
