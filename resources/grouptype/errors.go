package grouptype

import "errors"

var (
	// ErrNotGroupProvider is returned by Apply when the provider it is
	// given does not implement this package's Provider interface; nothing
	// was changed.
	ErrNotGroupProvider = errors.New("provider does not implement the group provider interface")
	// ErrWrongProperties is returned by Apply when the properties are not
	// this package's *Properties; nothing was changed.
	ErrWrongProperties = errors.New("properties are not group properties")
	// ErrNoState is returned by Apply when a provider's Status answers
	// without a state or without metadata.
	ErrNoState = errors.New("provider returned no group state")
	// ErrConflict is returned by Apply, before anything is changed, when
	// the gid a group should have belongs to another group (and by the
	// user type when a uid belongs to another user).
	ErrConflict = errors.New("account conflict")
)
