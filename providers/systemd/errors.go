package systemd

import "errors"

var (
	// ErrServiceNotFound is returned by Status when systemctl is-enabled
	// reports that the unit does not exist.
	ErrServiceNotFound = errors.New("service not found")
	// ErrInvalidIsActive is returned by Status when systemctl is-active
	// prints a state this provider does not know.
	ErrInvalidIsActive = errors.New("invalid systemctl is-active output")
	// ErrInvalidIsEnabled is returned by Status when systemctl is-enabled
	// prints a state this provider does not know.
	ErrInvalidIsEnabled = errors.New("invalid systemctl is-enabled output")
	// ErrCommandFailed is returned when a systemctl command that changes
	// something (start, stop, restart, enable, disable, daemon-reload) exits
	// non-zero; the error carries the exit status and stderr.
	ErrCommandFailed = errors.New("systemctl failed")
)
