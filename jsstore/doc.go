// Package jsstore owns the fleet's JetStream assets: the history stream
// CCM_HISTORY (one record per request and per replying host, see
// protocol.HistorySubject), the node registry, the KV bucket CCM_NODES, and
// the assignments, the KV bucket CCM_ASSIGNMENTS (signed manifests agents
// apply on their own; past revisions kept).
// It builds their configuration, creates or updates them, publishes and
// reads history records and lists registry entries. The agent, the
// orchestrator and the ccm-orch commands share it, so every writer and
// reader agrees on names, limits and message ids.
package jsstore
