package filetype_test

import (
	"context"
	"fmt"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/filetype"
)

// fakeProvider answers Status from a script (the last answer repeats) and
// records every changing call; it changes nothing, so after a change it
// "lies" unless the script says otherwise.
type fakeProvider struct {
	states    []*protocol.FileState
	statusErr error
	changeErr error
	calls     []string
}

var _ filetype.Provider = (*fakeProvider)(nil)

func (f *fakeProvider) Name() string { return "fake" }

func (f *fakeProvider) Status(_ context.Context, name string) (*protocol.FileState, error) {
	f.calls = append(f.calls, "Status "+name)
	if f.statusErr != nil {
		return nil, f.statusErr
	}
	st := f.states[0]
	if len(f.states) > 1 {
		f.states = f.states[1:]
	}
	return st, nil
}

func (f *fakeProvider) Store(_ context.Context, name string, contents []byte, source, owner, group, mode string) error {
	f.calls = append(f.calls, fmt.Sprintf("Store %s %q %q %s:%s %s", name, contents, source, owner, group, mode))
	return f.changeErr
}

func (f *fakeProvider) CreateDirectory(_ context.Context, dir, owner, group, mode string) error {
	f.calls = append(f.calls, fmt.Sprintf("CreateDirectory %s %s:%s %s", dir, owner, group, mode))
	return f.changeErr
}

func (f *fakeProvider) SetAttributes(_ context.Context, name, owner, group, mode string) error {
	f.calls = append(f.calls, fmt.Sprintf("SetAttributes %s %s:%s %s", name, owner, group, mode))
	return f.changeErr
}

func (f *fakeProvider) Remove(_ context.Context, name string, force bool) error {
	f.calls = append(f.calls, fmt.Sprintf("Remove %s force=%t", name, force))
	return f.changeErr
}

// namedOnly is a provider that does not implement filetype.Provider.
type namedOnly struct{}

func (namedOnly) Name() string { return "other" }

// otherProps are properties of some other type.
type otherProps struct{ resources.CommonProperties }

func (otherProps) Validate() error { return nil }
