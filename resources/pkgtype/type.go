package pkgtype

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources"
)

// Type is the package resource type.
type Type struct{}

var _ resources.Type = Type{}

// Name returns "package".
func (Type) Name() string { return protocol.TypePackage }

// DefaultEnsure returns "present".
func (Type) DefaultEnsure() string { return EnsurePresent }

// NewProperties returns empty package properties.
func (Type) NewProperties() resources.Properties { return &Properties{} }

// action is what an apply does to a package, as decide chooses it.
type action string

const (
	actionNone      action = "none"
	actionInstall   action = "install"
	actionUpgrade   action = "upgrade"
	actionDowngrade action = "downgrade"
	actionUninstall action = "uninstall"
)

// plan is the decision for one apply: the action, the version handed to the
// provider, and the noop message that describes it.
type plan struct {
	action  action
	version string
	message string
}

// Apply brings the package to its desired state.
//
// Phase 1: ensure latest installs the newest version when the package is
// absent and otherwise always upgrades to latest (the package manager is
// idempotent). For anything else a package already in its desired state is
// left alone. Phase 2: absent uninstalls; present installs when absent; a
// version installs when absent, else upgrades, does nothing or downgrades as
// the installed version compares (Provider.VersionCmp) older, equal or newer.
//
// Ensure present on an absent package asks the provider for an unversioned
// install, which installs the package manager's candidate, i.e. the newest
// available version; its noop message is CCM's, "Would have installed
// version present".
//
// Without noop the state is read again after acting and an error wrapping
// resources.ErrDesiredStateFailed is returned when it is not the desired
// one (for latest: when the package is still absent). Under noop nothing is
// changed and the outcome carries the noop message of the action.
func (t Type) Apply(ctx context.Context, ac *resources.ApplyContext, props resources.Properties, p resources.Provider) (*resources.Outcome, error) {
	prop, ok := props.(*Properties)
	if !ok {
		return nil, fmt.Errorf("package: %w: properties are %T, not *pkgtype.Properties", resources.ErrInvalid, props)
	}
	prov, ok := p.(Provider)
	if !ok {
		return nil, fmt.Errorf("package %q: %w (%T)", prop.Name, ErrNotPackageProvider, p)
	}
	// The engine validated already; validating again here keeps a bad name
	// from ever reaching a command, whoever calls Apply.
	if err := prop.Validate(); err != nil {
		return nil, fmt.Errorf("package: %w", err) // the error quotes the name safely
	}
	if ac == nil {
		ac = &resources.ApplyContext{}
	}
	log := ac.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("package", prop.Name, "provider", prov.Name(), "ensure", prop.Ensure)

	initial, err := status(ctx, prov, prop.Name)
	if err != nil {
		return nil, fmt.Errorf("package %s: %w", prop.Name, err)
	}
	pl, err := decide(prop.Ensure, initial.Ensure, prov)
	if err != nil {
		return &resources.Outcome{State: initial}, fmt.Errorf("package %s: %w", prop.Name, err)
	}
	log.Debug("package state", "current", initial.Ensure, "action", string(pl.action))

	if pl.action == actionNone {
		return &resources.Outcome{State: initial}, nil
	}
	if ac.Noop {
		if r, ok := prov.(Resolver); ok && pl.action != actionUninstall {
			if err := r.Resolve(ctx, prop.Name, pl.version); err != nil {
				return &resources.Outcome{State: initial}, fmt.Errorf("package %s: cannot %s: %w", prop.Name, pl.action, err)
			}
		}
		log.Info("noop: not changing package", "action", string(pl.action), "message", pl.message)
		return &resources.Outcome{State: initial, Changed: true, NoopMessage: pl.message, Diff: diffFor(initial.Ensure, pl, prop.Ensure, "")}, nil
	}

	log.Info("changing package", "action", string(pl.action), "current", initial.Ensure, "version", pl.version)
	if err := act(ctx, prov, prop.Name, pl); err != nil {
		return &resources.Outcome{State: initial}, fmt.Errorf("package %s: %s: %w", prop.Name, pl.action, err)
	}

	final, err := status(ctx, prov, prop.Name)
	if err != nil {
		return &resources.Outcome{State: initial}, fmt.Errorf("package %s: after %s: %w", prop.Name, pl.action, err)
	}
	out := &resources.Outcome{State: final, Changed: final.Ensure != initial.Ensure, Diff: diffFor(initial.Ensure, pl, prop.Ensure, final.Ensure)}
	met, err := isDesiredState(prop.Ensure, final.Ensure, prov)
	if err != nil {
		return out, fmt.Errorf("package %s: %w", prop.Name, err)
	}
	if !met {
		return out, fmt.Errorf("package %s: %w: wanted %s, found %s after %s", prop.Name, resources.ErrDesiredStateFailed, prop.Ensure, final.Ensure, pl.action)
	}
	return out, nil
}

// decide chooses the action for the desired ensure value and the current
// one (an installed version or "absent") in two phases: latest always acts
// (install when absent, else upgrade to the candidate); then, unless the
// state is already desired, absent uninstalls, present installs and a
// version installs, upgrades or downgrades to it.
func decide(desired, current string, prov Provider) (plan, error) {
	absent := current == EnsureAbsent

	// Phase 1: latest always acts.
	if desired == EnsureLatest {
		if absent {
			return plan{actionInstall, EnsureLatest, "Would have installed latest"}, nil
		}
		return plan{actionUpgrade, EnsureLatest, "Would have upgraded to latest"}, nil
	}
	met, err := isDesiredState(desired, current, prov)
	if err != nil {
		return plan{}, err
	}
	if met {
		return plan{action: actionNone}, nil
	}

	// Phase 2.
	switch {
	case desired == EnsureAbsent:
		return plan{actionUninstall, "", "Would have uninstalled"}, nil
	case absent:
		// For present this is an unversioned install (the newest
		// version); the message is CCM's, which names the ensure value:
		// "Would have installed version present".
		return plan{actionInstall, desired, "Would have installed version " + desired}, nil
	}
	c, err := prov.VersionCmp(current, desired, false)
	if err != nil {
		return plan{}, fmt.Errorf("comparing installed %s with %s: %w", current, desired, err)
	}
	switch {
	case c < 0:
		return plan{actionUpgrade, desired, "Would have upgraded to " + desired}, nil
	case c > 0:
		return plan{actionDowngrade, desired, "Would have downgraded to " + desired}, nil
	}
	return plan{action: actionNone}, nil
}

// isDesiredState reports whether current satisfies desired: present and
// latest accept any installed version (latest cannot be verified, package
// managers may report stale data), absent only absent, and a version an
// installed version that compares equal to it.
func isDesiredState(desired, current string, prov Provider) (bool, error) {
	switch desired {
	case EnsurePresent, EnsureLatest:
		return current != EnsureAbsent, nil
	case EnsureAbsent:
		return current == EnsureAbsent, nil
	}
	if current == EnsureAbsent {
		return false, nil
	}
	c, err := prov.VersionCmp(current, desired, false)
	if err != nil {
		return false, fmt.Errorf("comparing installed %s with %s: %w", current, desired, err)
	}
	return c == 0, nil
}

func act(ctx context.Context, prov Provider, name string, pl plan) error {
	switch pl.action {
	case actionInstall:
		return prov.Install(ctx, name, pl.version)
	case actionUpgrade:
		return prov.Upgrade(ctx, name, pl.version)
	case actionDowngrade:
		return prov.Downgrade(ctx, name, pl.version)
	case actionUninstall:
		return prov.Uninstall(ctx, name)
	}
	return nil
}

// status asks the provider for the package's state and checks it has one.
func status(ctx context.Context, prov Provider, name string) (*protocol.PackageState, error) {
	st, err := prov.Status(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("status: %w", err)
	}
	if st == nil || st.Ensure == "" {
		return nil, fmt.Errorf("status: %w: provider %s reported no state for %s", ErrUnexpectedOutput, prov.Name(), name)
	}
	return st, nil
}
