package exectype

import (
	"errors"
	"fmt"

	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/redact"
)

var (
	// ErrNoCommand is returned by providers asked to run an empty command
	// line, one that splits into no words at all.
	ErrNoCommand = errors.New("no command specified")
	// ErrNotExecProvider is returned by Apply when the provider it is given
	// does not implement Provider, or the properties are not *Properties.
	ErrNotExecProvider = errors.New("not an exec provider")
)

// ExitError is returned when a command ran and exited with a code outside
// its accepted returns. It carries the output separately, so the message
// of a sensitive command can be rendered without it (RedactedError).
type ExitError struct {
	// Name is the exec resource's name.
	Name string
	// Code is the exit code, Returns the accepted ones.
	Code    int
	Returns []int
	// Output is the first lines of the command's stderr (or stdout when
	// stderr is empty), joined and bounded; empty when it printed nothing.
	Output string
}

// Error reads "exec NAME: desired state not achieved: exit code 3 is not
// one of [0]: OUTPUT".
func (e *ExitError) Error() string { return e.render(e.Output) }

// RedactedError is Error with the output as s lets it leave.
func (e *ExitError) RedactedError(s *redact.Secrets) string { return e.render(s.Output(e.Output)) }

// Unwrap returns resources.ErrDesiredStateFailed.
func (e *ExitError) Unwrap() error { return resources.ErrDesiredStateFailed }

func (e *ExitError) render(output string) string {
	msg := fmt.Sprintf("exec %s: %s: exit code %d is not one of %v", e.Name, resources.ErrDesiredStateFailed, e.Code, e.Returns)
	if output != "" {
		msg += ": " + output
	}
	return msg
}
