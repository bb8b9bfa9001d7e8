// Package protocol holds the wire contract of CCM Fleet: the ids and shapes of
// ensure requests and responses, transaction events and per-type resource
// states, the fleet request and reply envelopes, the NATS subjects and their
// reversible token encoding, the --where filter language (parse and match),
// identity validation, the stable error codes and exit codes, strict
// decoding of documents that may be JSON or YAML, and the signing of
// message bodies with nkeys user keys (Sign, Verify, KeySigner, Verifier
// with its cache of expanded public keys, and the Ccm-Signer and
// Ccm-Signature headers). Signatures are made and checked with
// curve25519-voi under options that accept exactly what crypto/ed25519
// accepts; ed25519_accept_test.go holds that to the RFC 8032 and Wycheproof
// vectors and the known edge cases.
//
// Both the agent and its clients import this package; it imports nothing else
// of the project (of other modules, nkeys and curve25519-voi for signatures), opens no connections, does not log and never touches the
// host.
package protocol
