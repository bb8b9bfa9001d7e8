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
// matches ErrInvalid with errors.Is. Field is the property at fault and
// Reason what is wrong with it, so a caller can locate the problem (the
// agent answers it as ensure.properties.<Field>) without reading the
// error's text; Problem is both as people read them (`property mode:
// "0888" is not an octal number`), so two failures can be compared, and
// the problem shown.
type InvalidError struct {
	// Problem is the property at fault and what is wrong with it.
	Problem string
	// Field is the path of the property at fault within the properties
	// (`mode`, `health_checks[1]`), "" when the problem is not about one
	// property.
	Field string
	// Reason is what is wrong with Field, without naming it (`"0888" is
	// not an octal number`, `is required`); Problem when Field is "".
	Reason string
}

func (e *InvalidError) Error() string { return ErrInvalid.Error() + ": " + e.Problem }

// Is reports whether target is ErrInvalid.
func (e *InvalidError) Is(target error) bool { return target == ErrInvalid }

// Invalidf returns an *InvalidError whose Problem names the problem, for a
// problem that is not about one property (two properties together, a
// provider's limit); use InvalidField when it is.
func Invalidf(format string, args ...any) error {
	p := fmt.Sprintf(format, args...)
	return &InvalidError{Problem: p, Reason: p}
}

// InvalidField returns an *InvalidError about the property at field whose
// Reason is the formatted text; its Problem reads `property <field>:
// <reason>`, e.g. InvalidField("mode", "%q is not an octal number", m).
func InvalidField(field, format string, args ...any) error {
	r := fmt.Sprintf(format, args...)
	return &InvalidError{Problem: "property " + field + ": " + r, Field: field, Reason: r}
}

// InvalidFieldPredicate is InvalidField for a reason that completes the
// sentence `property <field> ...` (no colon): InvalidFieldPredicate("name",
// "is required") reads `property name is required`.
func InvalidFieldPredicate(field, format string, args ...any) error {
	r := fmt.Sprintf(format, args...)
	return &InvalidError{Problem: "property " + field + " " + r, Field: field, Reason: r}
}
