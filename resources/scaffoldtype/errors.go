package scaffoldtype

import "errors"

// ErrNotScaffoldProvider is returned by Apply when the provider it is given
// does not implement this package's Provider interface; nothing was changed.
var ErrNotScaffoldProvider = errors.New("provider does not implement the scaffold provider interface")
