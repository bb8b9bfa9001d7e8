package scaffoldtype

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/templates"
)

// Provider renders and removes scaffolds. Every method honours ctx before it
// starts work that blocks; errors name the target.
type Provider interface {
	resources.Provider
	// Status renders props in noop mode and reports which files would be
	// changed (added or updated), which are stable and which are not part
	// of the scaffold (purged). With ensure absent, Changed and Stable hold
	// only files that exist on disk. Status changes nothing in the target.
	Status(ctx context.Context, env *templates.Env, props *Properties) (*protocol.ScaffoldState, error)
	// Scaffold renders props into the target, removing purged files when
	// props.Purge is set; with noop it only reports, like Status.
	Scaffold(ctx context.Context, env *templates.Env, props *Properties, noop bool) (*protocol.ScaffoldState, error)
	// Remove deletes the managed files (state's Changed and Stable), then the
	// directories that became empty, then the target when it is empty. Files
	// that do not belong to the scaffold are kept.
	Remove(ctx context.Context, props *Properties, state *protocol.ScaffoldState) error
}

// Differ is implemented by providers that can say what an apply would
// change in detail: files added and purged, and per-file content diffs of
// the files updated, each over limit bytes (either side) as a summary line.
// It changes nothing and honours ctx.
type Differ interface {
	Diff(ctx context.Context, env *templates.Env, props *Properties, limit int64) (*protocol.Diff, error)
}

// Type is the scaffold resource type.
type Type struct{}

var _ resources.Type = Type{}

// Name returns "scaffold".
func (Type) Name() string { return protocol.TypeScaffold }

// DefaultEnsure returns "present".
func (Type) DefaultEnsure() string { return EnsurePresent }

// NewProperties returns empty scaffold properties.
func (Type) NewProperties() resources.Properties { return &Properties{} }

// Apply brings the target to the desired state: it asks the provider for the
// current state, returns it untouched when it is already desired, reports
// what would change under noop, and otherwise renders (present) or removes
// (absent) and checks the result, failing with resources.ErrDesiredStateFailed
// when the target still is not as desired.
func (t Type) Apply(ctx context.Context, ac *resources.ApplyContext, props resources.Properties, p resources.Provider) (*resources.Outcome, error) {
	in, ok := props.(*Properties)
	if !ok {
		return nil, fmt.Errorf("scaffold: properties are %T, not *scaffoldtype.Properties", props)
	}
	prov, ok := p.(Provider)
	if !ok {
		return nil, fmt.Errorf("scaffold %s: provider %T: %w", in.Name, p, ErrNotScaffoldProvider)
	}
	if ac == nil {
		ac = &resources.ApplyContext{}
	}
	env := ac.Env
	if env == nil {
		env = templates.New(nil, nil)
	}
	log := ac.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}

	// Work on a copy so the caller's properties keep the source as written.
	resolved := *in
	resolved.Source = ResolveSource(in.Source, ac.WorkingDir)

	current, err := prov.Status(ctx, env, &resolved)
	if err != nil {
		return nil, fmt.Errorf("scaffold %s: status: %w", in.Name, err)
	}
	if resolved.Ensure != EnsureAbsent && current.Metadata != nil && len(current.Metadata.Changed)+len(current.Metadata.Stable) == 0 {
		return &resources.Outcome{State: current}, fmt.Errorf("scaffold %s: source %s: %w", in.Name, in.Source, ErrNothingRendered)
	}
	if IsDesired(&resolved, current) {
		log.Debug("scaffold is in its desired state")
		return &resources.Outcome{State: current}, nil
	}

	diff := scaffoldDiff(ctx, ac, prov, env, &resolved, log)
	if ac.Noop {
		n, msg := noopReport(&resolved, current)
		return &resources.Outcome{State: current, Changed: n > 0, NoopMessage: msg, Diff: diff}, nil
	}

	switch resolved.Ensure {
	case EnsureAbsent:
		log.Info("removing scaffold files", "files", len(current.Metadata.Changed)+len(current.Metadata.Stable))
		if err := prov.Remove(ctx, &resolved, current); err != nil {
			return &resources.Outcome{State: current}, fmt.Errorf("scaffold %s: remove: %w", in.Name, err)
		}
	default:
		log.Info("rendering scaffold", "source", resolved.Source, "engine", resolved.Engine)
		if _, err := prov.Scaffold(ctx, env, &resolved, false); err != nil {
			return &resources.Outcome{State: current, Changed: true}, fmt.Errorf("scaffold %s: render: %w", in.Name, err)
		}
	}

	after, err := prov.Status(ctx, env, &resolved)
	if err != nil {
		return &resources.Outcome{State: current, Changed: true}, fmt.Errorf("scaffold %s: status after apply: %w", in.Name, err)
	}
	if !IsDesired(&resolved, after) {
		return &resources.Outcome{State: after, Changed: true}, fmt.Errorf("scaffold %s: %w: %d files changed and %d purged remain",
			in.Name, resources.ErrDesiredStateFailed, len(after.Metadata.Changed), len(after.Metadata.Purged))
	}
	// The state reported is the one read again after the change (every
	// file stable), as CCM reports it.
	return &resources.Outcome{State: after, Changed: true, Diff: diff}, nil
}

// scaffoldDiff asks a provider that implements Differ what would change; a
// failure is logged and gives no diff, never fails the resource.
func scaffoldDiff(ctx context.Context, ac *resources.ApplyContext, prov Provider, env *templates.Env, props *Properties, log *slog.Logger) *protocol.Diff {
	df, ok := prov.(Differ)
	if !ok {
		return nil
	}
	d, err := df.Diff(ctx, env, props, ac.Limit())
	if err != nil {
		log.Warn("could not compute the scaffold's diff", "error", err)
		return nil
	}
	return d
}

// IsDesired reports whether state shows the target in the state props ask
// for: absent when the target is gone or holds none of the scaffold's
// files; present when the target exists, no file would change, at least
// one is stable and, with purge, none would be purged. A nil state or one
// without metadata is never desired.
func IsDesired(props *Properties, state *protocol.ScaffoldState) bool {
	if state == nil || state.Metadata == nil {
		return false
	}
	md := state.Metadata
	if props.Ensure == EnsureAbsent {
		// Purged files do not belong to the scaffold and never matter here.
		return !md.TargetExists || (len(md.Changed) == 0 && len(md.Stable) == 0)
	}
	// At least one stable file must exist.
	if !md.TargetExists || len(md.Changed) > 0 || len(md.Stable) == 0 {
		return false
	}
	return !props.Purge || len(md.Purged) == 0
}

// noopReport counts the files an apply would touch and words the message.
func noopReport(props *Properties, state *protocol.ScaffoldState) (int, string) {
	md := state.Metadata
	if md == nil {
		return 0, ""
	}
	n := len(md.Changed)
	if props.Purge {
		n += len(md.Purged)
	}
	verb := "changed"
	if props.Ensure == EnsureAbsent {
		n += len(md.Stable)
		verb = "removed"
	}
	if n == 0 {
		return 0, ""
	}
	return n, fmt.Sprintf("Would have %s %d scaffold files", verb, n)
}
