package apt

import "errors"

var (
	// ErrNoCandidate is returned when ensure is latest and apt-cache policy
	// reports no installable candidate ("(none)") or none at all.
	ErrNoCandidate = errors.New("no installation candidate")
	// ErrInvalidVersion is returned by ParseVersion and VersionCmp for a
	// string that is not a Debian version.
	ErrInvalidVersion = errors.New("invalid Debian version")
	// ErrNoSuchVersion is returned when ensure names a version that
	// apt-cache policy does not list for the package: apt-get would refuse
	// it, so a noop must not promise it.
	ErrNoSuchVersion = errors.New("no such version")
)
