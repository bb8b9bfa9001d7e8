package resources

import (
	"context"
	"log/slog"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources/templates"
)

// Type is one resource type: it decodes its properties and knows how to bring
// a resource of its kind to the desired state through a provider.
type Type interface {
	// Name is the type's name, e.g. "file".
	Name() string
	// DefaultEnsure is the ensure value used when a resource gives none.
	DefaultEnsure() string
	// NewProperties returns an empty properties value to decode into.
	NewProperties() Properties
	// Apply brings the resource described by props to its desired state
	// using p, which implements the type's own provider interface. Under
	// ac.Noop it changes nothing and reports what it would do. It returns an
	// error when the resource failed; the outcome may still carry the state.
	// Apply honours ctx cancellation in everything that blocks.
	Apply(ctx context.Context, ac *ApplyContext, props Properties, p Provider) (*Outcome, error)
}

// ApplyContext carries what one apply may use besides its properties.
type ApplyContext struct {
	// Noop reports what would change without changing anything.
	Noop bool
	// Refresh is true when a resource this one subscribes to changed.
	Refresh bool
	// WorkingDir resolves relative sources (file, scaffold); empty when the
	// request has no working directory.
	WorkingDir string
	// Env is the template environment, for types that render templates.
	Env *templates.Env
	// Log receives the type's progress messages.
	Log *slog.Logger
	// DiffLimit is the largest content, in bytes on each side, a type shows
	// as a line diff; larger content gets a summary line. 0 means
	// DefaultDiffLimit.
	DiffLimit int64
}

// DefaultDiffLimit is the content size, on each side, above which a diff is
// a summary line (sizes and checksums) rather than a line diff.
const DefaultDiffLimit = 64 << 10

// Limit returns the diff limit to use.
func (ac *ApplyContext) Limit() int64 {
	if ac == nil || ac.DiffLimit <= 0 {
		return DefaultDiffLimit
	}
	return ac.DiffLimit
}

// Outcome is what a type reports after Apply.
type Outcome struct {
	// State is the resource's state after the apply (under noop: as found).
	State protocol.State
	// Changed is true when the resource changed, or under noop would change.
	Changed bool
	// Refreshed is true when the resource was refreshed through subscribe
	// (service restarted, exec run), or under noop would be.
	Refreshed bool
	// NoopMessage says what would have been done, under noop.
	NoopMessage string
	// Diff says how the resource differed from its desired state when it
	// changed or (under noop) would change; nil otherwise. The engine
	// redacts it for a sensitive resource.
	Diff *protocol.Diff
}

// Provider is the part every provider shares; each type declares the wider
// interface its providers implement and asserts it in Apply.
type Provider interface {
	// Name is the provider's name, e.g. "posix".
	Name() string
}
