package manifest

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/redact"
	"github.com/ccm-fleet/ccm/resources/applytype"
	"github.com/ccm-fleet/ccm/resources/engine"
)

// applyDepthKey carries how deeply the running manifest is nested in apply
// resources (0 for the top manifest).
type applyDepthKey struct{}

func applyDepth(ctx context.Context) int {
	d, _ := ctx.Value(applyDepthKey{}).(int)
	return d
}

// hasApply reports whether the manifest holds apply resources.
func (m *Manifest) hasApply() bool {
	for _, e := range m.entries {
		if e.typ == protocol.TypeApply {
			return true
		}
	}
	return false
}

// applyChild runs the child manifest of the apply resource p: loaded from
// its path relative to this manifest's directory, its data resolved as its
// own and the resource's data merged over it (the run's own Data still
// winning), in noop or health-check mode when the parent run or the
// resource asks. Its events come first in the report; the apply resource's
// own event counts them and fails when any of them failed.
func (r *runner) applyChild(ctx context.Context, p *engine.Prepared) *protocol.TransactionEvent {
	start := time.Now()
	props := p.Properties.(*applytype.Properties)
	c := props.Common()
	ev := protocol.NewTransactionEvent(engine.NewID(), protocol.TypeApply, c.Name, c.Alias)
	ev.Provider = applytype.ProviderName
	ev.RequestedEnsure = c.Ensure
	ev.Properties = p.Properties
	noop := r.noop || props.Noop
	ev.Noop = noop
	fail := func(err error) *protocol.TransactionEvent {
		ev.Failed = true
		ev.Errors = append(ev.Errors, err.Error())
		ev.Duration = time.Since(start)
		redact.Event(ev, p.Secrets())
		return ev
	}

	depth := applyDepth(ctx) + 1
	if depth > applytype.MaxDepth {
		return fail(fmt.Errorf("apply %s: %w: more than %d levels", c.Name, applytype.ErrTooDeep, applytype.MaxDepth))
	}
	path := applytype.ChildPath(c.Name, r.dir)
	child, err := Load(path)
	if err != nil {
		return fail(fmt.Errorf("apply %s: %w", c.Name, err))
	}
	if !props.NestedAllowed() && child.hasApply() {
		return fail(fmt.Errorf("apply %s: %w: allow_apply is false and the child manifest holds apply resources", c.Name, applytype.ErrNestedApply))
	}

	opts := r.opts
	opts.Noop = noop
	opts.MonitorOnly = r.opts.MonitorOnly || props.HealthCheckOnly
	opts.OnStart = nil
	opts.Data = maps.Clone(props.Data)
	if opts.Data == nil {
		opts.Data = map[string]any{}
	}
	maps.Copy(opts.Data, r.opts.Data)
	rep, err := Run(context.WithValue(ctx, applyDepthKey{}, depth), r.eng, child, opts)
	if err != nil {
		return fail(fmt.Errorf("apply %s: %w", c.Name, err))
	}
	r.all = append(r.all, rep.Events...)

	state := &protocol.ApplyState{CommonState: protocol.NewCommonState(protocol.TypeApply, c.Name, applytype.EnsurePresent), ResourceCount: len(rep.Events)}
	for _, cev := range rep.Events {
		switch {
		case cev.Failed:
			state.FailedCount++
		case cev.Changed:
			state.ChangedCount++
		}
	}
	state.Noop = noop
	state.Changed = state.ChangedCount > 0
	state.Stable = state.ChangedCount == 0 && state.FailedCount == 0
	ev.Status = state
	ev.FinalEnsure = applytype.EnsurePresent
	ev.Changed = state.Changed
	if noop && state.Changed {
		ev.NoopMessage = fmt.Sprintf("Would have changed %d of %d resources of %s", state.ChangedCount, state.ResourceCount, c.Name)
		state.NoopMessage = ev.NoopMessage
	}
	if state.FailedCount > 0 {
		ev.Failed = true
		ev.Errors = append(ev.Errors, fmt.Sprintf("child manifest had %d failed resources", state.FailedCount))
	}
	ev.Duration = time.Since(start)
	redact.Event(ev, p.Secrets())
	return ev
}
