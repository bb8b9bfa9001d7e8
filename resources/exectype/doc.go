// Package exectype is the exec resource type: it runs a command to bring the
// host into a desired state and keeps that idempotent with creates,
// refreshonly, the onlyif/unless guard commands and subscribe refreshes.
//
// The package owns the exec properties and their validation, the decision
// whether to run (subscribe refresh, then creates, then refreshonly, then the
// guards), noop reporting, and the check of the exit code against returns.
// How a command line becomes a process (split into words, or handed to
// /bin/sh -c) belongs to the providers, which implement Provider; see
// providers/execposix.
package exectype
