// Package protocol holds the wire contract of CCM Fleet: the ids and shapes of
// ensure requests and responses, transaction events and per-type resource
// states, the fleet request and reply envelopes, the NATS subjects and their
// reversible token encoding, the --where filter language (parse and match),
// identity validation, the stable error codes and exit codes, strict
// decoding of documents that may be JSON or YAML, and the signing of
// message bodies with nkeys user keys (Sign, Verify, KeySigner and the
// Ccm-Signer and Ccm-Signature headers).
//
// Both the agent and its clients import this package; it imports nothing else
// of the project (of other modules, nkeys for signatures), opens no connections, does not log and never touches the
// host.
package protocol
