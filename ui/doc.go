// Package ui serves the read-only web dashboard of ccm-orch ui: the fleet
// from the node registry, the runs and host results from the history
// stream, drift and health per resource, and one host's facts and
// timeline. It follows the registry (a KV watch) and the history stream
// (an ordered consumer) into memory, so pages render without reading
// JetStream, and pushes changes to open pages with server-sent events at
// a bounded rate. It never publishes a request and holds no signing key:
// it only needs read access to CCM_NODES and CCM_HISTORY.
//
// With a token, every page needs it: a script sends it as a bearer
// token, a person types it in once at /login and gets a session, whose
// random id (never the token) the browser keeps in an HttpOnly,
// SameSite=Strict cookie until its idle time or lifetime is over or it
// logs out. Wrong tokens are throttled per client address.
package ui
