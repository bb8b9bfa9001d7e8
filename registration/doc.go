// Package registration owns service registration entries as CCM defines
// them: an entry (cluster, service, protocol, address, port, priority,
// ttl, annotations) names one endpoint of a service; it is kept in a
// JetStream stream, one message per entry subject
// (choria.ccm.registration.v1.<cluster>.<protocol>.<service>.<address>.<instance>.<key>),
// expiring with a per-message TTL (the Nats-TTL header, NATS 2.11 and
// later), signed by the key of whoever published it, which is the subject's
// last token: a broker confines each host to its own key's subjects, and
// readers drop an entry that another key signed. Each entry names its host,
// and readers accept it only when its signer is the key a Trust holds for
// that host (a policy pin, the node registry's key, or the host's binding,
// BindHost), and only when it validates (Entry.Validate, the one check of
// publishers and readers: an IP address or RFC 1123 host name, bounded
// annotations without control characters). The package creates the
// stream, binds hosts to keys, publishes entries and withdraws them (a
// signed tombstone; an administrator's Remove purges), and queries and
// watches them.
package registration
