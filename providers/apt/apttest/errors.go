package apttest

import "errors"

// ErrUnavailable is returned by Setup on a host where Available reports
// false: not root, or a dpkg or apt tool missing.
var ErrUnavailable = errors.New("apt test repository unavailable on this host")
