package resources

import (
	"errors"
	"fmt"
)

var (
	// ErrInvalid is wrapped by every error that means the request itself is
	// wrong (a property fails validation, a template or condition cannot be
	// evaluated, an unknown type or provider is named). Nothing was changed.
	ErrInvalid = errors.New("invalid resource")
	// ErrUnknownType is returned, with ErrInvalid, for a type name no type has.
	ErrUnknownType = errors.New("unknown resource type")
	// ErrUnknownProvider is returned, with ErrInvalid, when provider: names a
	// provider the type does not have.
	ErrUnknownProvider = errors.New("unknown provider")
	// ErrNoSuitableProvider is returned when no provider can manage the
	// resource on this host; the resource fails.
	ErrNoSuitableProvider = errors.New("no suitable provider")
	// ErrDesiredStateFailed is returned when, after applying, the resource
	// still is not in its desired state.
	ErrDesiredStateFailed = errors.New("desired state not achieved")
	// ErrForbidden is wrapped by a RunOptions.Guard refusal: the caller's
	// policy does not allow the prepared resource. Nothing was changed.
	ErrForbidden = errors.New("forbidden")
	// ErrDuplicate is returned when a type or provider is registered twice.
	ErrDuplicate = errors.New("already registered")
)

// InvalidError is the error of properties that fail validation. It
// matches ErrInvalid with errors.Is; Problem names the property and what is
// wrong with it (`property mode: "0888" is not an octal number`), so two
// failures can be compared, and the problem shown, without reading the
// error's text.
type InvalidError struct {
	// Problem is the property at fault and what is wrong with it.
	Problem string
}

func (e *InvalidError) Error() string { return ErrInvalid.Error() + ": " + e.Problem }

// Is reports whether target is ErrInvalid.
func (e *InvalidError) Is(target error) bool { return target == ErrInvalid }

// Invalidf returns an *InvalidError whose Problem names the problem, e.g.
// Invalidf("mode %q is not octal", m).
func Invalidf(format string, args ...any) error {
	return &InvalidError{Problem: fmt.Sprintf(format, args...)}
}
