// Package protocol holds the wire contract of CCM Fleet: the ids and shapes of
// ensure requests and responses, transaction events and per-type resource
// states, the stable error codes, and strict decoding of requests that may be
// JSON or YAML.
//
// Both the agent and its clients import this package; it imports nothing else
// of the project, opens no connections, does not log and never touches the
// host.
package protocol
