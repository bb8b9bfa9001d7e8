package apt

import "errors"

var (
	// ErrNoCandidate is returned when ensure is latest and apt-cache policy
	// reports no installable candidate ("(none)") or none at all.
	ErrNoCandidate = errors.New("no installation candidate")
	// ErrInvalidVersion is returned by ParseVersion and VersionCmp for a
	// string that is not a Debian version.
	ErrInvalidVersion = errors.New("invalid Debian version")
)
