package manifest

import (
	"errors"
	"fmt"

	"github.com/ccm-fleet/ccm/resources"
)

var (
	// ErrUnknownReference is returned, with resources.ErrInvalid, when a
	// require or subscribe names a type#name (or type#alias) that no
	// resource of the manifest has, or one declared after the resource that
	// names it.
	ErrUnknownReference = errors.New("unknown reference")
	// ErrDuplicate is returned, with resources.ErrInvalid, when two resources
	// share a type#name (or a name collides with another's alias).
	ErrDuplicate = errors.New("duplicate resource")
	// ErrBundle is returned when a bundle cannot be built or unpacked: a
	// source outside the manifest directory, a symlink leading out of it, an
	// unsafe path or a bundle over its size limits.
	ErrBundle = errors.New("bad manifest bundle")
	// ErrDocument is returned, with resources.ErrInvalid, when the
	// manifest document as a whole cannot be read or decoded; the
	// message names the manifest.
	ErrDocument = errors.New("manifest document")
)

// invalidError is a problem with the manifest itself. Its message is only
// the problem (so the one line a user sees names the resource and the key),
// while errors.Is still finds resources.ErrInvalid and any cause.
type invalidError struct {
	msg    string
	causes []error
}

func (e *invalidError) Error() string { return e.msg }

func (e *invalidError) Unwrap() []error { return append([]error{resources.ErrInvalid}, e.causes...) }

// invalidf returns an error wrapping resources.ErrInvalid whose message is
// exactly the formatted text.
func invalidf(format string, args ...any) error {
	return &invalidError{msg: fmt.Sprintf(format, args...)}
}

// invalidWith is invalidf that also wraps cause (which is not repeated in the
// message unless the format includes it).
func invalidWith(cause error, format string, args ...any) error {
	return &invalidError{msg: fmt.Sprintf(format, args...), causes: []error{cause}}
}

// documentError is invalidWith for a problem with the whole document: it
// also wraps ErrDocument.
func documentError(cause error, format string, args ...any) error {
	e := &invalidError{msg: fmt.Sprintf(format, args...), causes: []error{ErrDocument}}
	if cause != nil {
		e.causes = append(e.causes, cause)
	}
	return e
}
