// Package ui serves the read-only web dashboard of ccm-orch ui: the fleet
// from the node registry, the runs and host results from the history
// stream, drift and health per resource, and one host's facts and
// timeline. It follows the registry (a KV watch) and the history stream
// (an ordered consumer) into memory, so pages render without reading
// JetStream, and pushes changes to open pages with server-sent events at
// a bounded rate. It never publishes a request and holds no signing key:
// it only needs read access to CCM_NODES and CCM_HISTORY.
package ui
