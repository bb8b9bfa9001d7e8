// Package agent is the fleet daemon. An Agent (New, then Run) connects out
// to NATS with its identity and facts, keeps its entry in the node
// registry, and runs three kinds of work through one pipeline: signed fleet
// requests (dispatch, admission, queue), the assignments that select it
// and the manifest sources of CCM's continuous agent (both enter at the
// executor). The finisher is the one place a reply is encoded, signed,
// audited, answered and recorded in history (spooled while JetStream is
// away).
//
// Standalone (NewStandalone) runs CCM's continuous agent on its own through the same
// executor and finisher; Simulation runs many agents in one process for
// demos, tests and benchmarks. docs/development.md walks the pipeline file
// by file; docs/protocol.md and docs/assignments.md give the rules each
// stage enforces.
package agent
