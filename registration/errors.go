package registration

import (
	"errors"
	"fmt"
)

// ErrInvalid is wrapped when an entry does not validate.
var ErrInvalid = errors.New("invalid registration entry")

// ErrStream is wrapped when the registration stream cannot be created,
// read or written.
var ErrStream = errors.New("registration stream")

// FilterError is a query position ValidFilter refused: the field, the
// value given and the rule it broke. It wraps ErrInvalid.
type FilterError struct {
	Field string
	Value string
	Rule  string
}

// Error names the filter, its value (cut to 60 bytes) and the rule.
func (e *FilterError) Error() string {
	return fmt.Sprintf("%s: %s", ErrInvalid, e.Reason())
}

// Reason is the refusal without the ErrInvalid prefix, for a page or a
// form that already says it is about a filter.
func (e *FilterError) Reason() string {
	return fmt.Sprintf("%s filter %.60q %s", e.Field, e.Value, e.Rule)
}

// Unwrap makes errors.Is(err, ErrInvalid) hold.
func (e *FilterError) Unwrap() error { return ErrInvalid }
