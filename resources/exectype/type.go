package exectype

import (
	"context"
	"fmt"
	"log/slog"
	"slices"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources"
)

// Noop messages, exactly as the specification words them.
const (
	// NoopWouldExecute is the noop message of a command that would run.
	NoopWouldExecute = "Would have executed"
	// NoopWouldExecuteSubscribe is the noop message of a command that would
	// run because a subscribed resource changed.
	NoopWouldExecuteSubscribe = "Would have executed via subscribe"
)

// Type is the exec resource type.
type Type struct{}

var _ resources.Type = Type{}

// Name returns "exec".
func (Type) Name() string { return protocol.TypeExec }

// DefaultEnsure returns "present", the only ensure value exec has.
func (Type) DefaultEnsure() string { return EnsurePresent }

// NewProperties returns empty exec properties to decode into.
func (Type) NewProperties() resources.Properties { return &Properties{} }

// Apply runs the command when the decision says so: a subscribe refresh runs
// it whatever else holds; otherwise an existing creates file, refreshonly, a
// failing onlyif or a succeeding unless skip it. Guards run under noop too
// (they change nothing); the command itself never does. After running, an
// exit code outside returns is an error wrapping resources.ErrDesiredStateFailed.
func (t Type) Apply(ctx context.Context, ac *resources.ApplyContext, props resources.Properties, p resources.Provider) (*resources.Outcome, error) {
	ep, ok := props.(*Properties)
	if !ok {
		return nil, fmt.Errorf("exec: %w: properties are %T, not *exectype.Properties", ErrNotExecProvider, props)
	}
	prov, ok := p.(Provider)
	if !ok {
		return nil, fmt.Errorf("exec %s: %w: provider %T does not implement exectype.Provider", ep.Name, ErrNotExecProvider, p)
	}
	if ac == nil {
		ac = &resources.ApplyContext{}
	}
	log := ac.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("provider", prov.Name()) // the engine's logger names the resource

	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("exec %s: %w", ep.Name, err)
	}
	st, err := status(ctx, prov, ep)
	if err != nil {
		return nil, err
	}

	d, err := decide(ctx, prov, ep, st, ac.Refresh, log)
	if err != nil {
		return &resources.Outcome{State: st}, fmt.Errorf("exec %s: %w", ep.Name, err)
	}
	if !d.run {
		log.Debug("not executing", "reason", d.reason)
		return &resources.Outcome{State: st}, nil
	}
	if ac.Noop {
		msg := NoopWouldExecute
		if d.refresh {
			msg = NoopWouldExecuteSubscribe
		}
		log.Info(msg, "reason", d.reason)
		st.Changed, st.Refreshed, st.Noop, st.NoopMessage = true, d.refresh, true, msg
		return &resources.Outcome{State: st, Changed: true, Refreshed: d.refresh, NoopMessage: msg}, nil
	}
	return t.execute(ctx, prov, ep, st, d, log)
}

// execute runs the command, records its exit code and checks it.
func (Type) execute(ctx context.Context, prov Provider, p *Properties, before *protocol.ExecState, d decision, log *slog.Logger) (*resources.Outcome, error) {
	log.Info("executing", "reason", d.reason)
	res, runErr := prov.Execute(ctx, p, p.CommandLine())
	// A sensitive command's output stays out of logs and the state.
	if res != nil && p.LogOutput && !p.Sensitive {
		logOutput(log, res)
	}
	if runErr != nil {
		// A command that started (a partial result) may have changed things.
		out := &resources.Outcome{State: before, Changed: res != nil, Refreshed: res != nil && d.refresh}
		return out, fmt.Errorf("exec %s: %w: %w", p.Name, resources.ErrDesiredStateFailed, runErr)
	}
	if res == nil {
		return &resources.Outcome{State: before}, fmt.Errorf("exec %s: %w: provider %s returned no result", p.Name, resources.ErrDesiredStateFailed, prov.Name())
	}

	after, err := status(ctx, prov, p)
	if err != nil {
		return &resources.Outcome{State: before, Changed: true, Refreshed: d.refresh}, err
	}
	code := res.ExitCode
	after.ExitCode = &code
	if p.LogOutput && !p.Sensitive {
		after.Metadata.Output = combinedOutput(res)
	}
	after.Changed, after.Refreshed = true, d.refresh
	out := &resources.Outcome{State: after, Changed: true, Refreshed: d.refresh}

	returns := p.AcceptedReturns()
	if !slices.Contains(returns, code) {
		return out, &ExitError{Name: p.Name, Code: code, Returns: returns, Output: firstLines(res)}
	}
	if p.Creates != "" && !after.CreatesSatisfied {
		log.Warn("command succeeded but did not create its creates file", "creates", p.Creates)
	}
	log.Info("executed", "exit_code", code)
	return out, nil
}

// status asks the provider for the state and checks it is complete.
func status(ctx context.Context, prov Provider, p *Properties) (*protocol.ExecState, error) {
	st, err := prov.Status(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("exec %s: %w", p.Name, err)
	}
	if st == nil || st.Metadata == nil {
		return nil, fmt.Errorf("exec %s: provider %s returned no state", p.Name, prov.Name())
	}
	return st, nil
}
