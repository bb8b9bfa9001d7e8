package fileposix

import (
	"errors"
	"fmt"
	"os/user"

	"github.com/ccm-fleet/ccm/resources/redact"
)

// AccountError is returned when the owner or group of a file names no
// account on this host. It carries the property and the name separately,
// so a sensitive resource's error can be rendered without the name
// (RedactedError).
type AccountError struct {
	// Property is "owner" or "group".
	Property string
	// Name is the name looked up.
	Name string
	// Err is the lookup's error.
	Err error
}

// Error reads `could not lookup user "NAME": unknown user NAME`.
func (e *AccountError) Error() string { return e.render(e.Name) }

// RedactedError is Error with the name as s lets the property's value
// leave.
func (e *AccountError) RedactedError(s *redact.Secrets) string {
	return e.render(s.Value(e.Property, e.Name))
}

// Unwrap returns the lookup's error.
func (e *AccountError) Unwrap() error { return e.Err }

func (e *AccountError) render(name string) string {
	kind := "user"
	if e.Property == "group" {
		kind = "group"
	}
	var reason string
	var uu user.UnknownUserError
	var ug user.UnknownGroupError
	switch {
	case errors.As(e.Err, &uu):
		reason = "unknown user " + name
	case errors.As(e.Err, &ug):
		reason = "unknown group " + name
	default:
		reason = e.Err.Error()
	}
	return fmt.Sprintf("could not lookup %s %q: %s", kind, name, reason)
}
