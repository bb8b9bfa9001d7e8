// Package orchestrator is the client side of the fleet: it finds the hosts a
// filter selects (Discover), sends them one request (one resource, or a
// manifest bundle), whole or in a sliding window of batches (Run), collects
// their replies until every expected host answered or its deadline passed,
// and sums the answers up: per-host outcomes, hosts grouped by identical
// outcome per resource as the request declared it, and the documented exit
// code.
//
// Discovery reads the node registry (the KV bucket CCM_NODES) when it
// exists and filters locally, or broadcasts (DiscoveryMode). Each run is
// recorded in the history stream CCM_HISTORY before it is sent (Async runs
// return right after); History, HistoryList and HistoryHost read the
// records back, rebuilding a run's Result, late replies included.
//
// With WithKey every request is signed, bound to its reply subject; each
// reply is checked against the public key the registry or a signed
// discovery announcement gives for its identity (Result.Spoofed,
// Result.Unverified).
//
// The package never prints; cmd/ccm-orch renders what it returns. Every
// call owns its one reply subscription and stops it before returning.
package orchestrator
