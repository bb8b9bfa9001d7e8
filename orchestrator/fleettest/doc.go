// Package fleettest starts a small fleet for tests: an embedded broker (see
// broker/brokertest) and simulated agents, each with its own NATS
// connection, applying resources for real through the built-in providers.
package fleettest
