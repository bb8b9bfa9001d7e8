// Package broker runs the real nats-server in-process with JetStream enabled.
//
// It owns the embedded server's lifecycle for everything in CCM Fleet that
// needs a NATS deployment of its own: `ccm-broker` (and the benchmark), the
// integration suites and every unit test that talks to NATS (through the
// brokertest helper). A Broker is configured by a YAML-tagged Config, started
// with Start (which waits, bounded, until the server accepts clients), stopped
// with Shutdown, and can be restarted on the same port and JetStream store with
// Restart so fault tests can show that clients reconnect and that persisted
// state survives.
//
// Security: Config.TLS turns TLS on (refusing plaintext clients) and, with
// Verify, requires client certificates from its CA; every TLS file is
// checked at start and an error names the file at fault. Config.AuthFile
// names a YAML file of users (AuthFile: nkey or user/password, with
// nats-server permissions) that clients must authenticate as. Reload reads
// the auth and TLS files again and applies them to the running server with
// nats-server's ReloadOptions, which disconnects removed users; an invalid
// file keeps the settings in force.
//
// Sites: a broker is a hub when Config.LeafNodes.Listen is set (site
// brokers connect to it as leaf nodes, authenticated as one of
// LeafNodes.Users, over TLS when configured) or a site broker when
// Config.Site is set (a leaf node of the hub at Config.Hub, running the
// JetStream domain named after the site). The history records and the
// registry entries (SiteLocalSubjects) never cross a leaf connection: each
// site keeps them in its own domain and the hub's stream and registry
// source them (jsstore's HistoryConfig.Sources), so each is held once.
//
// The server's own logging and signal handling are off by default; set
// Config.ServerLog to forward its log lines to the logger given with
// WithLogger.
package broker
