package scaffoldtype

import "errors"

// ErrNotScaffoldProvider is returned by Apply when the provider it is given
// does not implement this package's Provider interface; nothing was changed.
var ErrNotScaffoldProvider = errors.New("provider does not implement the scaffold provider interface")

// ErrNothingRendered is returned by Apply for ensure present when the
// source renders no file at all: at least one stable file must exist for a
// scaffold to be in its desired state, so it never could be. Nothing is
// changed.
var ErrNothingRendered = errors.New("the source renders no file; at least one stable file must exist")
