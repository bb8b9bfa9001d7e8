// Package agent is the daemon side of CCM Fleet. An Agent connects out to
// NATS with its identity and facts, subscribes to the request and discovery
// subjects that concern it (ccm.v1.req.all, ccm.v1.req.node.<identity>,
// ccm.v1.req.fact.<key>.<value> for each subject fact, and the matching
// ccm.v1.disc.* subjects), and for each fleet request: checks its signature
// against the signers of its Policy (or takes it unsigned when insecure),
// decodes it strictly, refuses it when its lifetime is off or over, answers
// a request id it has seen before from its persisted replay cache without
// running it again, checks the signed reply subject, ignores it when its
// filter or target list does not select this host, refuses a host or a
// resource outside the signer's types and scopes (package scope), writes
// an audit line (no audit line, no run), queues it (answering busy when
// the bounded queue is full), runs it through the resources engine with
// templates over facts only
// (no environment, no file reads), and replies with the transaction events.
// A manifest request's bundle is unpacked into a fresh private directory
// below os.TempDir(), run as one manifest and removed afterwards.
//
// Every piece of work is a job (job.go: what to run, who asked, how to
// answer) that goes through one pipeline: the dispatcher takes a fleet
// request off the subscriptions; admission runs its stages in order, each
// a small interface in a file of its own (authenticator, decode and
// lifetime, replay store, reply subject and targets, authorizer); the
// work queue holds it; the executor writes its audit line, runs it and
// hands the reply to the finisher, the one place that encodes, signs,
// keeps, audits, counts, answers (through the job's responder: NATS for a
// fleet request, history only for an assignment run or a watch repair)
// and records. Assignment runs and watch repairs enter at the executor.
// History (history.go) owns the records, the spool and its own lock.
//
// Each reply is also recorded in the history stream at
// ccm.v1.history.<request_id>.<identity>, with a message id so a retry is
// recognised; while JetStream does not answer, records wait in a bounded
// spool in the state directory (one 0600 file each) and are sent when it
// is back. The agent keeps its entry in the node registry (KV CCM_NODES):
// put before it serves, refreshed every heartbeat and on UpdateFacts,
// deleted when it stops.
//
// While it serves, the agent follows the assignments of the KV bucket
// CCM_ASSIGNMENTS with one watcher and runs those whose selector picks it:
// at once when one appears or changes, every interval (offset by its splay
// share), when its facts change, and when a watched file (watch: true)
// changes. Each assignment is admitted with the request path's own checks
// (authenticate, authorize, the engine guard); runs go one at a time in
// name order and are recorded in history like replies, marked with the
// assignment, its revision and the trigger. Assignments only move forward:
// the agent keeps per name a high-water mark (assignments.json in the
// state directory) and never runs a revision signed at or before it; a
// bare delete of a key changes nothing (only a signed removal does); only
// the signer that stored a name, or an assignments administrator, may
// replace or remove it; and the signer's hosts scope is judged again when
// the facts change and before every run.
//
// Every reply is signed with the agent's own key (agent.nk in the state
// directory), whose public key it announces in discovery and the registry.
//
// The manifest sources of Config.Sources (CCM's continuous agent inside
// `ccm-agent run`) run as jobs of the same pipeline, recorded in history
// marked with the source and trigger; Standalone runs CCM's continuous
// agent on its own (`ccm-agent agent`) through that pipeline's executor
// and finisher, with history only when it has a NATS connection.
//
// Policy.CheckOffline judges a request against a policy without an agent
// (ccm-orch policy check), with the agent's own code.
//
// Simulation runs many agents in one process, each with its own connection,
// identity and facts, for demos, tests and benchmarks.
package agent
