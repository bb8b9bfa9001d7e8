package natsconn

import "errors"

var (
	// ErrConnect is returned by Connect when no server in the list accepted
	// the initial connection (wrong URL, server down, TLS or auth refused).
	ErrConnect = errors.New("cannot connect to NATS")

	// ErrContext is returned when the named nats context cannot be found,
	// read or parsed.
	ErrContext = errors.New("nats context")

	// ErrCredentials is returned when a creds, nkey seed or TLS file cannot be
	// read or parsed, or the options combine them wrongly.
	ErrCredentials = errors.New("nats credentials")

	// ErrOptions is returned by Resolve and Connect when an option other
	// than a credential is malformed (an inbox prefix with a wildcard).
	ErrOptions = errors.New("nats connection options")
)
