package broker

import "errors"

var (
	// ErrInvalidConfig is returned by Config.Validate and New when the
	// configuration cannot describe a working server; nothing was started.
	ErrInvalidConfig = errors.New("invalid broker configuration")

	// ErrNotReady is returned by Start and Restart when the server did not
	// become ready for client connections in time or failed while starting.
	ErrNotReady = errors.New("broker not ready")

	// ErrInvalidAuth is returned by LoadAuthFile, ParseAuthFile, Start and
	// Reload when the auth file cannot be read or does not describe valid
	// users; Reload then keeps the users it had.
	ErrInvalidAuth = errors.New("invalid broker auth file")

	// ErrReload is returned by Reload when the server refused the new
	// settings; the previous ones stay in force.
	ErrReload = errors.New("broker reload failed")

	// ErrAlreadyRunning is returned by Start when the broker is running.
	ErrAlreadyRunning = errors.New("broker already running")

	// ErrNotRunning is returned by Restart and Reload when the broker is not running.
	ErrNotRunning = errors.New("broker not running")
)
