package usertype

import "errors"

var (
	// ErrNotUserProvider is returned by Apply when the provider it is
	// given does not implement this package's Provider interface; nothing
	// was changed.
	ErrNotUserProvider = errors.New("provider does not implement the user provider interface")
	// ErrWrongProperties is returned by Apply when the properties are not
	// this package's *Properties; nothing was changed.
	ErrWrongProperties = errors.New("properties are not user properties")
	// ErrNoState is returned by Apply when a provider's Status answers
	// without a state or without metadata.
	ErrNoState = errors.New("provider returned no user state")
)
