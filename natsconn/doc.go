// Package natsconn opens the NATS connections of every CCM Fleet command
// (agent and orchestrator) from one set of Options, so they all reconnect,
// authenticate, log and fail the same way.
//
// Options can name a `nats` CLI context (a JSON file under
// $XDG_CONFIG_HOME/nats/context/ or ~/.config/nats/context/); explicit
// options override what the context says. Connect fails fast, naming the
// servers, when no server accepts the first connection, then keeps an
// established connection alive forever: it reconnects with capped,
// jittered exponential backoff and logs disconnects, reconnects, closes and
// asynchronous errors on the given logger. Environment variables such as
// CCM_SERVER are the CLI's business, not this package's.
package natsconn
