package grouptype

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/ccm-fleet/ccm/resources"
)

// Ensure values of a group or user resource.
const (
	// EnsurePresent means the account must exist; it is the default.
	EnsurePresent = "present"
	// EnsureAbsent means the account must not exist.
	EnsureAbsent = "absent"
)

// Membership values: how a list of members (a group's members, a user's
// supplementary groups) is applied.
const (
	// MembershipMinimum only adds what the list names; it is the default.
	MembershipMinimum = "minimum"
	// MembershipInclusive makes the membership exactly the list.
	MembershipInclusive = "inclusive"
)

// MaxNameLength is the longest account name accepted, in bytes (shadow's
// useradd and groupadd limit).
const MaxNameLength = 32

// MaxID is the largest uid or gid accepted: (uid_t)-1 is "no id".
const MaxID = 1<<32 - 2

// MaxMembers bounds a list of members or groups.
const MaxMembers = 1000

// nameRe is the allow-list for account names: a letter or underscore,
// then letters, digits, '_', '.' and '-'. Nothing that a tool could read
// as an option, a list separator (','), a field separator (':'),
// whitespace or a path.
var nameRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]*$`)

// ValidateName checks an account name (user or group) against the
// allow-list, for the property field: 1 to MaxNameLength bytes, a letter
// or '_' first, then letters, digits, '_', '.' and '-'. Providers call it
// again before running anything. A failure wraps resources.ErrInvalid.
func ValidateName(field, name string) error {
	switch {
	case name == "":
		return resources.InvalidFieldPredicate(field, "is required")
	case len(name) > MaxNameLength:
		return resources.InvalidField(field, "account name %.40q is longer than %d bytes", name, MaxNameLength)
	case !nameRe.MatchString(name):
		return resources.InvalidField(field, "account name %.40q must start with a letter or '_' and hold only letters, digits, '_', '.' and '-'", name)
	}
	return nil
}

// ValidateNames checks a list of account names: each valid, none twice,
// at most MaxMembers.
func ValidateNames(field string, names []string) error {
	if len(names) > MaxMembers {
		return resources.InvalidField(field, "%d names, the limit is %d", len(names), MaxMembers)
	}
	for i, n := range names {
		if err := ValidateName(field, n); err != nil {
			return err
		}
		if slices.Contains(names[:i], n) {
			return resources.InvalidField(field, "%q is listed twice", n)
		}
	}
	return nil
}

// ValidateMembership sets the default membership (minimum) and checks it.
func ValidateMembership(m *string) error {
	switch *m {
	case "":
		*m = MembershipMinimum
	case MembershipMinimum, MembershipInclusive:
	default:
		return resources.InvalidField("membership", "%q is not one of %s, %s", *m, MembershipMinimum, MembershipInclusive)
	}
	return nil
}

// ValidateEnsure checks a present/absent ensure value.
func ValidateEnsure(ensure string) error {
	if ensure != EnsurePresent && ensure != EnsureAbsent {
		return resources.InvalidField("ensure", "%q is not one of %s, %s", ensure, EnsurePresent, EnsureAbsent)
	}
	return nil
}

// ValidateID checks a uid or gid.
func ValidateID(field string, id *ID) error {
	if id != nil && (*id < 0 || *id > MaxID) {
		return resources.InvalidField(field, "%d is not between 0 and %d", *id, int64(MaxID))
	}
	return nil
}

// ID is a uid or gid as properties give it: a JSON number, or a string
// of decimal digits (what a template such as "{{ data.uid }}" expands to).
type ID int64

// UnmarshalJSON accepts a JSON number or a string holding a whole number.
func (n *ID) UnmarshalJSON(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	var s string
	switch x := v.(type) {
	case float64:
		s = strconv.FormatFloat(x, 'f', -1, 64)
	case string:
		s = strings.TrimSpace(x)
	default:
		return fmt.Errorf("expected a number, got %.40s", string(b))
	}
	i, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return fmt.Errorf("%.40q is not a whole number", s)
	}
	*n = ID(i)
	return nil
}

// IDOf is the id a state holds, 0 when it holds none (an account that
// does not exist).
func IDOf(id *int64) int64 {
	if id == nil {
		return 0
	}
	return *id
}

// Int returns the id, for a set pointer.
func (n *ID) Int() int64 { return int64(*n) }

// Wanted returns the membership list a resource wants, given the current
// one: with minimum, current plus what want adds; with inclusive, want.
// Both sorted. add and remove are what changes.
func Wanted(membership string, current, want []string) (result, add, remove []string) {
	for _, w := range want {
		if !slices.Contains(current, w) {
			add = append(add, w)
		}
	}
	if membership == MembershipInclusive {
		for _, c := range current {
			if !slices.Contains(want, c) {
				remove = append(remove, c)
			}
		}
		result = slices.Clone(want)
	} else {
		result = append(slices.Clone(current), add...)
	}
	slices.Sort(result)
	slices.Sort(add)
	slices.Sort(remove)
	return result, add, remove
}

// List joins names for a message: "a, b".
func List(names []string) string { return strings.Join(names, ", ") }
