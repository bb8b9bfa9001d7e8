package broker

import "errors"

var (
	// ErrInvalidConfig is returned by Config.Validate and New when the
	// configuration cannot describe a working server; nothing was started.
	ErrInvalidConfig = errors.New("invalid broker configuration")

	// ErrNotReady is returned by Start and Restart when the server did not
	// become ready for client connections in time or failed while starting.
	ErrNotReady = errors.New("broker not ready")

	// ErrAlreadyRunning is returned by Start when the broker is running.
	ErrAlreadyRunning = errors.New("broker already running")

	// ErrNotRunning is returned by Restart when the broker is not running.
	ErrNotRunning = errors.New("broker not running")
)
