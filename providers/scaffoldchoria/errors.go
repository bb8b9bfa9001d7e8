package scaffoldchoria

import "errors"

var (
	// ErrUnsupportedSource is returned (with resources.ErrInvalid) when the
	// source is a URL other than file://: this provider renders local
	// directories only.
	ErrUnsupportedSource = errors.New("only local directories and file:// URLs of them are supported as sources")
	// ErrTargetNotDirectory is returned when the target exists but is not a
	// directory; nothing is changed.
	ErrTargetNotDirectory = errors.New("target exists and is not a directory")
	// ErrOutsideTarget is returned by Remove when the state lists a file that
	// is not inside the target directory; nothing is removed.
	ErrOutsideTarget = errors.New("file is not inside the target directory")
	// ErrUnknownEngine is returned when the engine is neither go nor jet.
	ErrUnknownEngine = errors.New("unknown scaffold engine")
	// ErrSourceTree is wrapped when a source cannot be copied as it is: a
	// link, a device or a FIFO below it, or more than the bounds allow.
	ErrSourceTree = errors.New("scaffold source")
)
