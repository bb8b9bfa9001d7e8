package servicetype

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources"
)

// Provider is what a service provider implements. Every method honours ctx
// cancellation and returns an error when the init system could not be asked
// or refused; service is a name that passed ValidateName.
type Provider interface {
	resources.Provider

	// Enable makes the service start at boot.
	Enable(ctx context.Context, service string) error
	// Disable makes the service not start at boot.
	Disable(ctx context.Context, service string) error
	// Start starts the service.
	Start(ctx context.Context, service string) error
	// Stop stops the service.
	Stop(ctx context.Context, service string) error
	// Restart stops and starts the service; used for subscribe refreshes.
	Restart(ctx context.Context, service string) error
	// Status returns the service's current state: Ensure is running or
	// stopped, Metadata says whether it is running and enabled.
	Status(ctx context.Context, service string) (*protocol.ServiceState, error)
}

// StartPending is implemented by providers whose init system can have a
// service on its way up: not running yet, so Status reports it stopped, but
// about to run unless it is stopped (systemd: "activating", a start job in
// progress or a restart pending after the service exited). Apply asks it
// when ensure is stopped and Status found the service stopped, and stops a
// service that is on its way up.
type StartPending interface {
	// StartPending reports whether service is on its way up.
	StartPending(ctx context.Context, service string) (bool, error)
}

// Type is the service resource type.
type Type struct{}

var _ resources.Type = Type{}

// Name returns "service".
func (Type) Name() string { return protocol.TypeService }

// DefaultEnsure returns "running".
func (Type) DefaultEnsure() string { return EnsureRunning }

// NewProperties returns empty service properties to decode into.
func (Type) NewProperties() resources.Properties { return &Properties{} }

// action is one provider call the apply decided on.
type action struct {
	verb    string // for errors: "start", "restart", ...
	from    string // the diff's from, when not the state's ensure
	doing   string // for logs: "starting service", ...
	noop    string // the noop message: "Would have started", ...
	refresh bool   // true for the restart a subscribe refresh asked for
	masked  bool   // true when the init system refuses it for a masked service
	call    func(ctx context.Context, service string) error
}

// Apply brings the service to its desired state in two phases, running
// state then enabled state:
//
//   - running state: with ac.Refresh, a service that should run and runs is
//     restarted (Refreshed); one that should run but is stopped is started,
//     not restarted; a refresh of a service that should be stopped is
//     ignored. Otherwise a stopped service that should run is started and a
//     running one that should be stopped is stopped.
//   - enabled state: only when Enable is set, the service is enabled or
//     disabled when it differs.
//
// A masked service (Status's Metadata.Masked) whose desired state needs a
// start, a restart or an enable fails with ErrMasked before anything is
// called, under noop too.
//
// Under ac.Noop only Status is called and NoopMessage lists what would have
// been done ("Would have started. Would have enabled"). Otherwise Status is
// asked again after acting and an error wrapping
// resources.ErrDesiredStateFailed is returned when the service still is not
// as desired.
func (Type) Apply(ctx context.Context, ac *resources.ApplyContext, props resources.Properties, p resources.Provider) (*resources.Outcome, error) {
	prop, ok := props.(*Properties)
	if !ok {
		return nil, fmt.Errorf("service: %w (got %T)", ErrWrongProperties, props)
	}
	sp, ok := p.(Provider)
	if !ok {
		return nil, fmt.Errorf("service %s: %w (got %T)", prop.Name, ErrNotServiceProvider, p)
	}
	log := ac.Log
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	log = log.With("type", protocol.TypeService, "name", prop.Name, "provider", sp.Name())

	initial, err := status(ctx, sp, prop.Name)
	if err != nil {
		return nil, fmt.Errorf("service %s: %w", prop.Name, err)
	}
	out := &resources.Outcome{State: initial}

	pending, err := startPending(ctx, sp, prop, initial)
	if err != nil {
		return out, fmt.Errorf("service %s: %w", prop.Name, err)
	}
	actions := plan(prop, initial, ac.Refresh, pending, sp)
	if err := refuseMasked(initial, actions); err != nil {
		return out, fmt.Errorf("service %s: %w", prop.Name, err)
	}
	if len(actions) == 0 {
		if !isDesiredState(prop, initial) {
			return out, desiredStateError(prop, initial)
		}
		return out, nil
	}

	out.Diff = diffFor(initial, actions)
	if ac.Noop {
		noopOutcome(out, actions, prop, log)
		return out, nil
	}
	return act(ctx, out, actions, prop, sp, log)
}

// noopOutcome records in out what the actions would have done: their noop
// messages, joined, and whether one refreshes.
func noopOutcome(out *resources.Outcome, actions []action, prop *Properties, log *slog.Logger) {
	msgs := make([]string, 0, len(actions))
	for _, a := range actions {
		log.Info("noop: skipping "+a.verb, "ensure", prop.Ensure)
		msgs = append(msgs, a.noop)
		out.Refreshed = out.Refreshed || a.refresh
	}
	out.Changed = true
	out.NoopMessage = strings.Join(msgs, ". ")
}

// act runs the actions in order, then checks the service reached the
// desired state and is not still starting when it should be stopped.
func act(ctx context.Context, out *resources.Outcome, actions []action, prop *Properties, sp Provider, log *slog.Logger) (*resources.Outcome, error) {
	for _, a := range actions {
		log.Info(a.doing, "ensure", prop.Ensure)
		if err := a.call(ctx, prop.Name); err != nil {
			return out, fmt.Errorf("service %s: %s: %w", prop.Name, a.verb, err)
		}
		out.Changed = true
		out.Refreshed = out.Refreshed || a.refresh
	}

	final, err := status(ctx, sp, prop.Name)
	if err != nil {
		return out, fmt.Errorf("service %s: after %s: %w", prop.Name, actions[len(actions)-1].verb, err)
	}
	out.State = final
	if !isDesiredState(prop, final) {
		return out, desiredStateError(prop, final)
	}
	if pending, err := startPending(ctx, sp, prop, final); err != nil {
		return out, fmt.Errorf("service %s: after %s: %w", prop.Name, actions[len(actions)-1].verb, err)
	} else if pending {
		return out, fmt.Errorf("service %s: %w: wanted stopped, found it starting", prop.Name, resources.ErrDesiredStateFailed)
	}
	return out, nil
}

// refuseMasked fails a plan that would start, restart or enable a masked
// service: the init system refuses those until the service is unmasked, so
// a noop must not report them as what a run would do, and a run need not
// try. Stopping and disabling a masked service are left to the plan (a
// masked service is neither running nor enabled, so they are usually not
// needed).
func refuseMasked(state *protocol.ServiceState, actions []action) error {
	if !state.Metadata.Masked {
		return nil
	}
	for _, a := range actions {
		if a.masked {
			return fmt.Errorf("%w: systemctl unmask it first", ErrMasked)
		}
	}
	return nil
}

// startPending asks a provider that can tell whether a service that should
// be stopped, and is, is nonetheless on its way up.
func startPending(ctx context.Context, sp Provider, prop *Properties, state *protocol.ServiceState) (bool, error) {
	pp, ok := sp.(StartPending)
	if !ok || prop.Ensure != EnsureStopped || state.Ensure != EnsureStopped {
		return false, nil
	}
	pending, err := pp.StartPending(ctx, prop.Name)
	if err != nil {
		return false, fmt.Errorf("status: %w", err)
	}
	return pending, nil
}

// plan decides the provider calls for props given the current state,
// whether a subscribed resource changed and whether a stopped service is on
// its way up.
func plan(prop *Properties, state *protocol.ServiceState, refresh, pending bool, sp Provider) []action {
	var actions []action
	running := state.Ensure == EnsureRunning

	// Phase 1: running state.
	switch {
	case prop.Ensure == EnsureRunning && running && refresh:
		actions = append(actions, action{verb: "restart", doing: "restarting service", noop: "Would have restarted", refresh: true, masked: true, call: sp.Restart})
	case prop.Ensure == EnsureRunning && !running:
		// Also on refresh: a stopped service is started, not restarted.
		actions = append(actions, action{verb: "start", doing: "starting service", noop: "Would have started", masked: true, call: sp.Start})
	case prop.Ensure == EnsureStopped && running:
		// A refresh is ignored when the service should be stopped.
		actions = append(actions, action{verb: "stop", doing: "stopping service", noop: "Would have stopped", call: sp.Stop})
	case prop.Ensure == EnsureStopped && pending:
		// Not running yet, but it will unless it is stopped.
		actions = append(actions, action{verb: "stop", from: "starting", doing: "stopping service on its way up", noop: "Would have stopped", call: sp.Stop})
	}

	// Phase 2: enabled state, only when enable is set.
	if prop.Enable != nil {
		switch enabled := state.Metadata.Enabled; {
		case *prop.Enable && !enabled:
			actions = append(actions, action{verb: "enable", doing: "enabling service", noop: "Would have enabled", masked: true, call: sp.Enable})
		case !*prop.Enable && enabled:
			actions = append(actions, action{verb: "disable", doing: "disabling service", noop: "Would have disabled", call: sp.Disable})
		}
	}
	return actions
}

// isDesiredState is the service's check: the running state must match ensure,
// and the enabled state must match enable when enable is set.
func isDesiredState(prop *Properties, state *protocol.ServiceState) bool {
	if prop.Ensure != state.Ensure {
		return false
	}
	if prop.Enable != nil && *prop.Enable != state.Metadata.Enabled {
		return false
	}
	return true
}

func desiredStateError(prop *Properties, state *protocol.ServiceState) error {
	want := prop.Ensure
	if prop.Enable != nil {
		want = fmt.Sprintf("%s and enabled=%t", want, *prop.Enable)
	}
	return fmt.Errorf("service %s: %w: wanted %s, found %s and enabled=%t",
		prop.Name, resources.ErrDesiredStateFailed, want, state.Ensure, state.Metadata.Enabled)
}

// status asks the provider for the state and rejects an empty answer.
func status(ctx context.Context, sp Provider, name string) (*protocol.ServiceState, error) {
	st, err := sp.Status(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("status: %w", err)
	}
	if st == nil || st.Metadata == nil {
		return nil, ErrNoState
	}
	return st, nil
}
