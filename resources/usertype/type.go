package usertype

import (
	"context"
	"fmt"
	"slices"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/grouptype"
)

// Attributes a Change sets.
const (
	AttrUID     = "uid"
	AttrGroup   = "group"
	AttrGroups  = "groups"
	AttrHome    = "home"
	AttrShell   = "shell"
	AttrComment = "comment"
	AttrExpiry  = "expiry"
	AttrLocked  = "locked"
)

// Change is one attribute of an existing account to set.
type Change struct {
	// Attribute is one of the Attr constants.
	Attribute string
	// Value is the new value: a uid, a group name or id, a home, shell or
	// comment, a date or "never", "true" or "false" for locked.
	Value string
	// Groups is the value of AttrGroups: the groups to add (Append) or
	// the exact list.
	Groups []string
	// Append adds Groups to the user's groups instead of setting them.
	Append bool
	// MoveHome moves the home directory's content to the new home.
	MoveHome bool
}

// Provider is what a user provider implements. Every method honours ctx
// cancellation and returns an error when the system could not be asked or
// refused; names passed grouptype.ValidateName.
type Provider interface {
	resources.Provider

	// Status reads the account as the system does (NSS): Ensure present
	// with its attributes, or absent. Its metadata never holds the hash.
	Status(ctx context.Context, user string) (*protocol.UserState, error)
	// PasswordHash returns the account's password hash without a lock's
	// leading '!', "" for none.
	PasswordHash(ctx context.Context, user string) (string, error)
	// UserByID returns the name of the user holding uid, "" for none.
	UserByID(ctx context.Context, uid int64) (string, error)
	// Create adds the account with every attribute p sets except the
	// password and the lock.
	Create(ctx context.Context, p *Properties) error
	// Modify changes one attribute of an existing account.
	Modify(ctx context.Context, user string, c Change) error
	// SetPassword sets the account's password hash, never through argv.
	SetPassword(ctx context.Context, user, hash string) error
	// Delete removes the account, and its home when removeHome is set.
	Delete(ctx context.Context, user string, removeHome bool) error
}

// Type is the user resource type.
type Type struct{}

var _ resources.Type = Type{}

// Name returns "user".
func (Type) Name() string { return protocol.TypeUser }

// DefaultEnsure returns "present".
func (Type) DefaultEnsure() string { return grouptype.EnsurePresent }

// NewProperties returns empty user properties to decode into.
func (Type) NewProperties() resources.Properties { return &Properties{} }

// Apply brings the account to its desired state. A uid another user holds
// is grouptype.ErrConflict before anything changes. Present: create the
// account when missing, else change each attribute that differs; then the
// password, then the lock. Absent: remove it (its home too with
// manage_home). Under ac.Noop nothing changes and NoopMessage names each
// change ("Would have created the user", "Would have changed shell
// /bin/sh to /bin/bash", "Would have changed the password"). Afterwards
// the account is read again and one still not as desired is
// resources.ErrDesiredStateFailed.
func (Type) Apply(ctx context.Context, ac *resources.ApplyContext, props resources.Properties, p resources.Provider) (*resources.Outcome, error) {
	prop, ok := props.(*Properties)
	if !ok {
		return nil, fmt.Errorf("user: %w (got %T)", ErrWrongProperties, props)
	}
	up, ok := p.(Provider)
	if !ok {
		return nil, fmt.Errorf("user %s: %w (got %T)", prop.Name, ErrNotUserProvider, p)
	}
	log := grouptype.Logger(ctx, ac).With("type", protocol.TypeUser, "name", prop.Name, "provider", up.Name())
	initial, err := status(ctx, up, prop.Name)
	if err != nil {
		return nil, fmt.Errorf("user %s: %w", prop.Name, err)
	}
	out := &resources.Outcome{State: initial}
	if err := uidConflict(ctx, up, prop, initial); err != nil {
		return out, fmt.Errorf("user %s: %w", prop.Name, err)
	}
	steps, err := plan(ctx, prop, initial, up)
	if err != nil {
		return out, fmt.Errorf("user %s: %w", prop.Name, err)
	}
	if len(steps) == 0 {
		return out, desired(ctx, prop, initial, up)
	}
	if err := grouptype.RunSteps(ctx, ac, out, steps, "user", prop.Name, prop.Ensure, log); err != nil || ac.Noop {
		return out, err
	}
	final, err := status(ctx, up, prop.Name)
	if err != nil {
		return out, fmt.Errorf("user %s: after changing it: %w", prop.Name, err)
	}
	out.State = final
	return out, desired(ctx, prop, final, up)
}

// uidConflict refuses a uid that another user holds.
func uidConflict(ctx context.Context, up Provider, prop *Properties, st *protocol.UserState) error {
	if prop.Ensure != grouptype.EnsurePresent || prop.UID == nil || (st.Ensure == grouptype.EnsurePresent && grouptype.IDOf(st.Metadata.UID) == prop.UID.Int()) {
		return nil
	}
	holder, err := up.UserByID(ctx, prop.UID.Int())
	if err != nil {
		return fmt.Errorf("looking up uid %d: %w", prop.UID.Int(), err)
	}
	if holder != "" && holder != prop.Name {
		return fmt.Errorf("%w: uid %d belongs to user %s; nothing was changed", grouptype.ErrConflict, prop.UID.Int(), holder)
	}
	return nil
}

// status asks the provider and rejects an empty answer; groups sorted.
func status(ctx context.Context, up Provider, name string) (*protocol.UserState, error) {
	st, err := up.Status(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("status: %w", err)
	}
	if st == nil || st.Metadata == nil {
		return nil, ErrNoState
	}
	slices.Sort(st.Metadata.Groups)
	return st, nil
}
