package shadow

import "errors"

var (
	// ErrCommand is returned when a tool exits non-zero; the error names
	// the command (never a password) and what it printed.
	ErrCommand = errors.New("command failed")
	// ErrParse is returned when getent prints a line this package cannot
	// read.
	ErrParse = errors.New("unexpected getent output")
)
