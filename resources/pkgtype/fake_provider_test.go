package pkgtype_test

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources/pkgtype"
)

// fakeProvider is an in-memory package manager: one package, installed at
// a version or absent. It records every call.
type fakeProvider struct {
	// guards everything below
	mu        sync.Mutex
	installed string // a version, or "absent"
	latest    string // what present and latest install
	calls     []string
	actErr    error // returned by Install, Upgrade, Downgrade, Uninstall
	statusErr error
	cmpErr    error
	stuck     bool // actions succeed but change nothing
}

var _ pkgtype.Provider = (*fakeProvider)(nil)

func newFake(installed string) *fakeProvider {
	return &fakeProvider{installed: installed, latest: "3.0"}
}

func (f *fakeProvider) Name() string { return "fake" }

func (f *fakeProvider) record(format string, args ...any) {
	f.calls = append(f.calls, fmt.Sprintf(format, args...))
}

// Calls returns the recorded calls.
func (f *fakeProvider) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

// Mutations returns the recorded calls other than Status.
func (f *fakeProvider) Mutations() []string {
	var out []string
	for _, c := range f.Calls() {
		if !strings.HasPrefix(c, "Status") {
			out = append(out, c)
		}
	}
	return out
}

func (f *fakeProvider) set(version string) error {
	if f.actErr != nil {
		return f.actErr
	}
	if f.stuck {
		return nil
	}
	switch version {
	case pkgtype.EnsurePresent, pkgtype.EnsureLatest:
		f.installed = f.latest
	default:
		f.installed = version
	}
	return nil
}

func (f *fakeProvider) Install(_ context.Context, pkg, version string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("Install %s %s", pkg, version)
	return f.set(version)
}

func (f *fakeProvider) Upgrade(_ context.Context, pkg, version string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("Upgrade %s %s", pkg, version)
	return f.set(version)
}

func (f *fakeProvider) Downgrade(_ context.Context, pkg, version string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("Downgrade %s %s", pkg, version)
	return f.set(version)
}

func (f *fakeProvider) Uninstall(_ context.Context, pkg string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("Uninstall %s", pkg)
	if f.actErr != nil {
		return f.actErr
	}
	if !f.stuck {
		f.installed = pkgtype.EnsureAbsent
	}
	return nil
}

func (f *fakeProvider) Status(_ context.Context, pkg string) (*protocol.PackageState, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("Status %s", pkg)
	if f.statusErr != nil {
		return nil, f.statusErr
	}
	st := &protocol.PackageState{
		CommonState: protocol.NewCommonState(protocol.TypePackage, pkg, f.installed),
		Metadata:    &protocol.PackageMetadata{Name: pkg, Provider: "fake"},
	}
	if f.installed != pkgtype.EnsureAbsent {
		st.Metadata.Version = f.installed
	}
	return st, nil
}

// VersionCmp orders the plain "N.M" versions the specs use.
func (f *fakeProvider) VersionCmp(a, b string, _ bool) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cmpErr != nil {
		return 0, f.cmpErr
	}
	return cmp.Compare(a, b), nil
}

// notPackageProvider is a provider of some other type.
type notPackageProvider struct{}

func (notPackageProvider) Name() string { return "other" }
