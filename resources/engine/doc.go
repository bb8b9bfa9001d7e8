// Package engine runs resources end to end on one host: it expands templates
// in the raw properties, decodes them strictly into the type's properties,
// applies the default ensure, validates, evaluates control.if/unless, selects
// a provider, calls the type's Apply and records the outcome as a
// protocol.TransactionEvent.
//
// A Session is one run (one ensure, later one manifest): provider instances
// are made once per session, so per-run provider work (a daemon reload) is
// done once per run. Preparing a resource has no side effects, so bad input
// is reported before anything on the host changes.
package engine
