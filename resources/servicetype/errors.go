package servicetype

import "errors"

var (
	// ErrNotServiceProvider is returned by Apply when the provider it is
	// given does not implement this package's Provider interface; nothing
	// was changed.
	ErrNotServiceProvider = errors.New("provider does not implement the service provider interface")
	// ErrWrongProperties is returned by Apply when the properties are not
	// this package's *Properties; nothing was changed.
	ErrWrongProperties = errors.New("properties are not service properties")
	// ErrNoState is returned by Apply when a provider's Status answers
	// without a state or without metadata.
	ErrNoState = errors.New("provider returned no service state")
	// ErrMasked is returned by Apply, under noop and in a real run alike,
	// when the service is masked (the provider's Status says so) and its
	// desired state needs a start, a restart or an enable, which the init
	// system would refuse; nothing was called to change it.
	ErrMasked = errors.New("the unit is masked")
)
