package manifest

import (
	"context"
	"fmt"
	"time"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources/applytype"
	"github.com/ccm-fleet/ccm/resources/engine"
	"github.com/ccm-fleet/ccm/resources/redact"
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

// applyChild runs the child manifest of the apply resource p (the i-th of
// the run), prepared with the parent before anything ran. Its events come
// first in the report; the apply resource's own event counts them and
// fails when any of them failed, or when the child could not be prepared.
func (r *runner) applyChild(ctx context.Context, i int, p *engine.Prepared) *protocol.TransactionEvent {
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

	if err := r.pr.childErr[i]; err != nil {
		return fail(err)
	}
	child := r.pr.children[i]
	rep := child.run(context.WithValue(ctx, applyDepthKey{}, child.depth), time.Now())
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
