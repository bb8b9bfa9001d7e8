package grouptype

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources"
)

// Provider is what a group provider implements. Every method honours ctx
// cancellation and returns an error when the system could not be asked or
// refused; names passed ValidateName.
type Provider interface {
	resources.Provider

	// Status reads the group as the system does (NSS): Ensure present
	// with its gid and members, or absent.
	Status(ctx context.Context, group string) (*protocol.GroupState, error)
	// GroupByID returns the name of the group holding gid, "" for none.
	GroupByID(ctx context.Context, gid int64) (string, error)
	// Create adds the group with gid (nil: the tool chooses), in the
	// system range when system is set.
	Create(ctx context.Context, group string, gid *ID, system bool) error
	// SetGID changes an existing group's gid.
	SetGID(ctx context.Context, group string, gid int64) error
	// SetMembers makes the group's members exactly members.
	SetMembers(ctx context.Context, group string, members []string) error
	// Delete removes the group.
	Delete(ctx context.Context, group string) error
}

// Type is the group resource type.
type Type struct{}

var _ resources.Type = Type{}

// Name returns "group".
func (Type) Name() string { return protocol.TypeGroup }

// DefaultEnsure returns "present".
func (Type) DefaultEnsure() string { return EnsurePresent }

// NewProperties returns empty group properties to decode into.
func (Type) NewProperties() resources.Properties { return &Properties{} }

// step is one provider call the apply decided on.
type step = Step

// Step is one change of an account, group or user: its noop message, the
// change it records in the diff, and the call that makes it.
type Step struct {
	Noop   string
	Change protocol.Change
	Call   func(ctx context.Context) error
}

// RunSteps records the steps in out (changed, their changes as its diff,
// their noop messages joined under noop) and, unless ac is a noop, makes
// them in order; an error names the kind and name of the account.
func RunSteps(ctx context.Context, ac *resources.ApplyContext, out *resources.Outcome, steps []Step, kind, name, ensure string, log *slog.Logger) error {
	out.Changed = true
	out.Diff = &protocol.Diff{}
	msgs := make([]string, 0, len(steps))
	for _, s := range steps {
		out.Diff.Changes = append(out.Diff.Changes, s.Change)
		msgs = append(msgs, s.Noop)
	}
	if ac.Noop {
		log.Info("noop: skipping changes", "ensure", ensure)
		out.NoopMessage = strings.Join(msgs, ". ")
		return nil
	}
	for _, s := range steps {
		log.Info(strings.TrimPrefix(s.Noop, "Would have "), "ensure", ensure)
		if err := s.Call(ctx); err != nil {
			return fmt.Errorf("%s %s: %w", kind, name, err)
		}
	}
	return nil
}

// Apply brings the group to its desired state. A gid another group holds
// is ErrConflict before anything changes. Present: create it when missing
// (then set its members when listed), else change the gid and the members
// (minimum adds, inclusive sets exactly). Absent: remove it. Under ac.Noop
// only Status and GroupByID are called and NoopMessage names each change
// ("Would have created the group", "Would have changed gid 1001 to 1002",
// "Would have added members alice, bob", "Would have removed members
// carol"). Afterwards Status is read again and a group still not as
// desired is resources.ErrDesiredStateFailed.
func (Type) Apply(ctx context.Context, ac *resources.ApplyContext, props resources.Properties, p resources.Provider) (*resources.Outcome, error) {
	prop, ok := props.(*Properties)
	if !ok {
		return nil, fmt.Errorf("group: %w (got %T)", ErrWrongProperties, props)
	}
	gp, ok := p.(Provider)
	if !ok {
		return nil, fmt.Errorf("group %s: %w (got %T)", prop.Name, ErrNotGroupProvider, p)
	}
	log := Logger(ctx, ac).With("type", protocol.TypeGroup, "name", prop.Name, "provider", gp.Name())
	initial, err := status(ctx, gp, prop.Name)
	if err != nil {
		return nil, fmt.Errorf("group %s: %w", prop.Name, err)
	}
	out := &resources.Outcome{State: initial}
	if err := gidConflict(ctx, gp, prop, initial); err != nil {
		return out, fmt.Errorf("group %s: %w", prop.Name, err)
	}
	steps := plan(prop, initial, gp)
	if len(steps) == 0 {
		return out, desired(prop, initial)
	}
	if err := RunSteps(ctx, ac, out, steps, "group", prop.Name, prop.Ensure, log); err != nil || ac.Noop {
		return out, err
	}
	final, err := status(ctx, gp, prop.Name)
	if err != nil {
		return out, fmt.Errorf("group %s: after changing it: %w", prop.Name, err)
	}
	out.State = final
	return out, desired(prop, final)
}

// Logger is the resource's logger (resources.Logger), ac.Log when ctx
// has none, else one that discards.
func Logger(ctx context.Context, ac *resources.ApplyContext) *slog.Logger {
	if l := resources.Logger(ctx, ac.Log); l != nil {
		return l
	}
	return slog.New(slog.DiscardHandler)
}

// gidConflict refuses a gid that another group holds.
func gidConflict(ctx context.Context, gp Provider, prop *Properties, st *protocol.GroupState) error {
	if prop.Ensure != EnsurePresent || prop.GID == nil || (st.Ensure == EnsurePresent && IDOf(st.Metadata.GID) == prop.GID.Int()) {
		return nil
	}
	holder, err := gp.GroupByID(ctx, prop.GID.Int())
	if err != nil {
		return fmt.Errorf("looking up gid %d: %w", prop.GID.Int(), err)
	}
	if holder != "" && holder != prop.Name {
		return fmt.Errorf("%w: gid %d belongs to group %s; nothing was changed", ErrConflict, prop.GID.Int(), holder)
	}
	return nil
}

// plan decides the provider calls for prop given the current state.
func plan(prop *Properties, st *protocol.GroupState, gp Provider) []step {
	name := prop.Name
	exists := st.Ensure == EnsurePresent
	if prop.Ensure == EnsureAbsent {
		if !exists {
			return nil
		}
		return []step{{Noop: "Would have removed the group", Change: protocol.Change{Field: "ensure", From: EnsurePresent, To: EnsureAbsent},
			Call: func(ctx context.Context) error { return gp.Delete(ctx, name) }}}
	}
	var steps []step
	var current []string
	if !exists {
		steps = append(steps, step{Noop: "Would have created the group", Change: protocol.Change{Field: "ensure", From: EnsureAbsent, To: EnsurePresent},
			Call: func(ctx context.Context) error { return gp.Create(ctx, name, prop.GID, prop.System) }})
	} else {
		current = st.Metadata.Members
		if prop.GID != nil && prop.GID.Int() != IDOf(st.Metadata.GID) {
			from, to := strconv.FormatInt(IDOf(st.Metadata.GID), 10), strconv.FormatInt(prop.GID.Int(), 10)
			steps = append(steps, step{Noop: fmt.Sprintf("Would have changed gid %s to %s", from, to), Change: protocol.Change{Field: "gid", From: from, To: to},
				Call: func(ctx context.Context) error { return gp.SetGID(ctx, name, prop.GID.Int()) }})
		}
	}
	if prop.Members == nil {
		return steps
	}
	result, add, remove := Wanted(prop.Membership, current, prop.Members)
	if len(add) == 0 && len(remove) == 0 {
		return steps
	}
	var msg []string
	if len(add) > 0 {
		msg = append(msg, "Would have added members "+List(add))
	}
	if len(remove) > 0 {
		msg = append(msg, "Would have removed members "+List(remove))
	}
	return append(steps, step{Noop: strings.Join(msg, ". "), Change: protocol.Change{Field: "members", From: List(current), To: List(result)},
		Call: func(ctx context.Context) error { return gp.SetMembers(ctx, name, result) }})
}

// desired is the group's check: ensure, the gid when set, and the members
// when listed (all of them; with inclusive, no others).
func desired(prop *Properties, st *protocol.GroupState) error {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("group %s: %w: %s", prop.Name, resources.ErrDesiredStateFailed, fmt.Sprintf(format, args...))
	}
	if st.Ensure != prop.Ensure {
		return fail("wanted %s, found %s", prop.Ensure, st.Ensure)
	}
	if prop.Ensure == EnsureAbsent {
		return nil
	}
	if prop.GID != nil && IDOf(st.Metadata.GID) != prop.GID.Int() {
		return fail("wanted gid %d, found %d", prop.GID.Int(), IDOf(st.Metadata.GID))
	}
	if prop.Members != nil {
		_, add, remove := Wanted(prop.Membership, st.Metadata.Members, prop.Members)
		if len(add) > 0 || len(remove) > 0 {
			return fail("members are %s", List(st.Metadata.Members))
		}
	}
	return nil
}

// status asks the provider and rejects an empty answer; the members are
// sorted.
func status(ctx context.Context, gp Provider, name string) (*protocol.GroupState, error) {
	st, err := gp.Status(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("status: %w", err)
	}
	if st == nil || st.Metadata == nil {
		return nil, ErrNoState
	}
	slices.Sort(st.Metadata.Members)
	return st, nil
}
