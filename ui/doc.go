// Package ui serves the read-only web dashboard of ccm-orch ui: the fleet
// from the node registry, the runs and host results from the history
// stream (an assignment's runs grouped into one row), each assignment's
// hosts by state as ccm-orch status reports them, drift and health per
// resource (one-off commands left out), one host's facts, assignments
// and timeline, and the services hosts registered (read from the
// registration stream at each request, only entries signed by the key
// their subject names listed, the others counted as dropped). Every page has a JSON document under /api/v1/, and the
// dashboard's own Prometheus metrics are at /metrics. It follows the
// registry and the assignments (KV watches) and the history stream (an
// ordered consumer) into memory, so pages render without reading
// JetStream, and pushes changes to open pages with server-sent events at a
// bounded rate. It never publishes a request and holds no signing key: it
// only needs read access to CCM_NODES, CCM_ASSIGNMENTS and CCM_HISTORY.
// It follows its NATS connection too: while it is lost, every page says
// since when and that what it shows is as of then, and the loss and the
// return are logged. It logs one line per request it answers.
//
// With a token, every page, JSON document and the metrics need it: a
// script sends it as a bearer token, a person types it in once at /login
// and gets a session, whose random id (never the token) the browser keeps
// in an HttpOnly, SameSite=Strict cookie until its idle time or lifetime
// is over or it logs out. Wrong tokens are throttled per client address.
package ui
