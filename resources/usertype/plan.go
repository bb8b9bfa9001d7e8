package usertype

import (
	"context"
	"fmt"
	"strconv"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/grouptype"
)

// step is one provider call the apply decided on.
type step = grouptype.Step

// difference is one attribute of an existing account that differs.
type difference struct {
	field, from, to string
	change          Change
	noop            string
}

// plan decides the provider calls for prop given the current state.
func plan(ctx context.Context, prop *Properties, st *protocol.UserState, up Provider) ([]step, error) {
	name := prop.Name
	exists := st.Ensure == grouptype.EnsurePresent
	if prop.Ensure == grouptype.EnsureAbsent {
		if !exists {
			return nil, nil
		}
		if prop.ManageHome && st.Metadata.Home != prop.Home {
			return nil, fmt.Errorf("its home is %s, not %s: refusing to remove a home the resource does not name; nothing was changed", shown(st.Metadata.Home), prop.Home)
		}
		return []step{{Noop: "Would have removed the user", Change: protocol.Change{Field: "ensure", From: grouptype.EnsurePresent, To: grouptype.EnsureAbsent},
			Call: func(ctx context.Context) error { return up.Delete(ctx, name, prop.ManageHome) }}}, nil
	}
	if !exists {
		steps := []step{{Noop: "Would have created the user", Change: protocol.Change{Field: "ensure", From: grouptype.EnsureAbsent, To: grouptype.EnsurePresent},
			Call: func(ctx context.Context) error { return up.Create(ctx, prop) }}}
		if prop.Password != "" {
			steps = append(steps, passwordStep(up, prop, "Would have set the password"))
		}
		if prop.Locked != nil && *prop.Locked {
			steps = append(steps, modifyStep(up, name, difference{field: AttrLocked, from: "false", to: "true",
				change: Change{Attribute: AttrLocked, Value: "true"}, noop: "Would have locked the account"}))
		}
		return steps, nil
	}
	if m := st.Metadata; prop.ManageHome && m.Home != "" && prop.Home != m.Home {
		// usermod -m would take the old home from where it is, and the
		// policy judged only the home the resource names.
		return nil, fmt.Errorf("its home is %s: manage_home does not move a home to %s, as that takes the old one from where it is, which the policy did not judge; move it yourself, or drop manage_home to change only the account's home field; nothing was changed", m.Home, prop.Home)
	}
	var steps []step
	for _, d := range differences(prop, st.Metadata) {
		steps = append(steps, modifyStep(up, name, d))
	}
	newHash := false
	if prop.Password != "" {
		have, err := up.PasswordHash(ctx, name)
		if err != nil {
			return nil, fmt.Errorf("reading the password hash: %w", err)
		}
		if newHash = have != prop.Password; newHash {
			steps = append(steps, passwordStep(up, prop, "Would have changed the password"))
		}
	}
	// The lock last: setting a hash unlocks.
	if d, ok := lockDifference(prop, st.Metadata, newHash); ok {
		steps = append(steps, modifyStep(up, name, d))
	}
	return steps, nil
}

func modifyStep(up Provider, name string, d difference) step {
	return step{Noop: d.noop, Change: protocol.Change{Field: d.field, From: d.from, To: d.to},
		Call: func(ctx context.Context) error { return up.Modify(ctx, name, d.change) }}
}

// passwordStep sets the hash; its diff and message never show it.
func passwordStep(up Provider, prop *Properties, noop string) step {
	return step{Noop: noop, Change: protocol.Change{Field: "password", From: protocol.SensitiveValue, To: protocol.SensitiveValue},
		Call: func(ctx context.Context) error { return up.SetPassword(ctx, prop.Name, prop.Password) }}
}

// lockDifference is the lock change, if any; relock is set when a new
// hash is about to unlock a locked account that should stay locked.
func lockDifference(prop *Properties, m *protocol.UserMetadata, relock bool) (difference, bool) {
	if prop.Locked == nil {
		return difference{}, false
	}
	want := *prop.Locked
	if want == m.Locked && !(want && relock) {
		return difference{}, false
	}
	d := difference{field: AttrLocked, from: strconv.FormatBool(m.Locked), to: strconv.FormatBool(want),
		change: Change{Attribute: AttrLocked, Value: strconv.FormatBool(want)}, noop: "Would have locked the account"}
	if !want {
		d.noop = "Would have unlocked the account"
	}
	return d, true
}

// differences lists the attributes of an existing account that differ
// from prop, in the order they are changed.
func differences(prop *Properties, m *protocol.UserMetadata) []difference {
	var out []difference
	add := func(field, from, to string, c Change) {
		if c.Attribute == "" {
			c.Attribute = field
		}
		if c.Value == "" && c.Groups == nil {
			c.Value = to
		}
		out = append(out, difference{field: field, from: from, to: to, change: c,
			noop: fmt.Sprintf("Would have changed %s %s to %s", field, shown(from), shown(to))})
	}
	if prop.UID != nil && prop.UID.Int() != grouptype.IDOf(m.UID) {
		add(AttrUID, strconv.FormatInt(grouptype.IDOf(m.UID), 10), strconv.FormatInt(prop.UID.Int(), 10), Change{})
	}
	if from, to, differs := primaryGroup(prop, m); differs {
		field := AttrGroup
		if prop.GID != nil {
			field = "gid"
		}
		add(field, from, to, Change{Attribute: AttrGroup})
	}
	if d, ok := groupsDifference(prop, m); ok {
		out = append(out, d)
	}
	if prop.Home != "" && prop.Home != m.Home {
		add(AttrHome, m.Home, prop.Home, Change{MoveHome: prop.ManageHome})
	}
	if prop.Shell != "" && prop.Shell != m.Shell {
		add(AttrShell, m.Shell, prop.Shell, Change{})
	}
	if prop.Comment != nil && *prop.Comment != m.Comment {
		add(AttrComment, m.Comment, *prop.Comment, Change{})
	}
	if prop.Expiry != "" && prop.Expiry != m.Expiry {
		add(AttrExpiry, m.Expiry, prop.Expiry, Change{})
	}
	return out
}

// primaryGroup compares the primary group by id (gid, or a numeric group)
// or by name.
func primaryGroup(prop *Properties, m *protocol.UserMetadata) (from, to string, differs bool) {
	switch {
	case prop.GID != nil:
		return strconv.FormatInt(grouptype.IDOf(m.GID), 10), strconv.FormatInt(prop.GID.Int(), 10), prop.GID.Int() != grouptype.IDOf(m.GID)
	case prop.Group == "":
		return "", "", false
	}
	if id, err := strconv.ParseInt(prop.Group, 10, 64); err == nil {
		return strconv.FormatInt(grouptype.IDOf(m.GID), 10), prop.Group, id != grouptype.IDOf(m.GID)
	}
	from = m.Group
	if from == "" {
		from = strconv.FormatInt(grouptype.IDOf(m.GID), 10)
	}
	return from, prop.Group, prop.Group != m.Group
}

// groupsDifference is the supplementary groups' change: with minimum the
// missing groups are appended, with inclusive the list is set.
func groupsDifference(prop *Properties, m *protocol.UserMetadata) (difference, bool) {
	if prop.Groups == nil {
		return difference{}, false
	}
	result, add, remove := grouptype.Wanted(prop.Membership, m.Groups, prop.Groups)
	if len(add) == 0 && len(remove) == 0 {
		return difference{}, false
	}
	d := difference{field: AttrGroups, from: grouptype.List(m.Groups), to: grouptype.List(result)}
	if prop.Membership == grouptype.MembershipInclusive {
		d.change = Change{Attribute: AttrGroups, Groups: result}
	} else {
		d.change = Change{Attribute: AttrGroups, Groups: add, Append: true}
	}
	switch {
	case len(add) > 0 && len(remove) > 0:
		d.noop = fmt.Sprintf("Would have added groups %s. Would have removed groups %s", grouptype.List(add), grouptype.List(remove))
	case len(add) > 0:
		d.noop = "Would have added groups " + grouptype.List(add)
	default:
		d.noop = "Would have removed groups " + grouptype.List(remove)
	}
	return d, true
}

// shown is a value in a message: "" for an empty one.
func shown(v string) string {
	if v == "" {
		return `""`
	}
	return v
}

// desired is the account's check: ensure, then every attribute set.
func desired(ctx context.Context, prop *Properties, st *protocol.UserState, up Provider) error {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("user %s: %w: %s", prop.Name, resources.ErrDesiredStateFailed, fmt.Sprintf(format, args...))
	}
	if st.Ensure != prop.Ensure {
		return fail("wanted %s, found %s", prop.Ensure, st.Ensure)
	}
	if prop.Ensure == grouptype.EnsureAbsent {
		return nil
	}
	if ds := differences(prop, st.Metadata); len(ds) > 0 {
		return fail("%s is %s, wanted %s", ds[0].field, shown(ds[0].from), shown(ds[0].to))
	}
	if prop.Locked != nil && *prop.Locked != st.Metadata.Locked {
		return fail("locked is %t, wanted %t", st.Metadata.Locked, *prop.Locked)
	}
	if prop.Password != "" {
		have, err := up.PasswordHash(ctx, prop.Name)
		if err != nil {
			return fmt.Errorf("user %s: reading the password hash: %w", prop.Name, err)
		}
		if have != prop.Password {
			return fail("the password hash differs")
		}
	}
	return nil
}
