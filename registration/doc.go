// Package registration owns service registration entries as CCM defines
// them: an entry (cluster, service, protocol, address, port, priority,
// ttl, annotations) names one endpoint of a service; it is kept in a
// JetStream stream, one message per entry subject
// (choria.ccm.registration.v1.<cluster>.<protocol>.<service>.<address>.<instance>),
// expiring with a per-message TTL (the Nats-TTL header, NATS 2.11 and
// later), signed by the key of whoever published it. The package creates
// the stream, publishes and withdraws entries, and queries and watches
// them, verifying each entry's signature.
package registration
