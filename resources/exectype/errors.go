package exectype

import "errors"

var (
	// ErrNoCommand is returned by providers asked to run an empty command
	// line, one that splits into no words at all.
	ErrNoCommand = errors.New("no command specified")
	// ErrNotExecProvider is returned by Apply when the provider it is given
	// does not implement Provider, or the properties are not *Properties.
	ErrNotExecProvider = errors.New("not an exec provider")
)
