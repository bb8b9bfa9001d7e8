package manifest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/redact"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/engine"
)

// Report is the outcome of one Run.
type Report struct {
	// Events holds one transaction event per resource, in run order.
	Events []*protocol.TransactionEvent `json:"events"`
	// Summary counts the events.
	Summary Summary `json:"summary"`
	// PreMessage is the templated pre_message.
	PreMessage string `json:"pre_message,omitempty"`
	// PostMessage is the templated post_message, only set when nothing failed.
	PostMessage string `json:"post_message,omitempty"`
}

// Summary counts a run's events. Stable, Changed, Failed and Skipped
// partition Total by each event's outcome (under noop Changed counts the
// resources that would change; a refresh that changed nothing counts as
// changed); Refreshed counts the events with Refreshed set, whatever their
// outcome.
type Summary struct {
	Total     int           `json:"total"`
	Stable    int           `json:"stable"`
	Changed   int           `json:"changed"`
	Failed    int           `json:"failed"`
	Skipped   int           `json:"skipped"`
	Refreshed int           `json:"refreshed"`
	Duration  time.Duration `json:"duration"`
}

// Summarize counts events.
func Summarize(events []*protocol.TransactionEvent, took time.Duration) Summary {
	s := Summary{Total: len(events), Duration: took}
	for _, ev := range events {
		switch ev.Outcome() {
		case "failed":
			s.Failed++
		case "skipped":
			s.Skipped++
		case "stable":
			s.Stable++
		default:
			s.Changed++
		}
		if ev.Refreshed {
			s.Refreshed++
		}
	}
	return s
}

// Run applies (or, with Noop, audits) the manifest through eng in one engine
// session and returns every transaction event in order plus a summary.
//
// Every resource is prepared (templated, decoded, validated, conditions
// evaluated, provider chosen) and every reference checked before the first
// is applied, so bad input changes nothing. The error is non-nil only when
// the manifest could not be run at all (data, template, validation,
// duplicate or missing reference: it wraps resources.ErrInvalid); resource
// failures are in the events.
func Run(ctx context.Context, eng *engine.Engine, m *Manifest, opts RunOptions) (*Report, error) {
	start := time.Now()
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	pl, err := m.plan(opts)
	if err != nil {
		return nil, err
	}
	sess := eng.NewSession(engine.RunOptions{Noop: opts.Noop, MonitorOnly: opts.MonitorOnly, Env: pl.env, WorkingDir: m.workingDir, Guard: opts.Guard, Prepared: opts.Prepared, DiffLimit: opts.DiffLimit})
	prepared := make([]*engine.Prepared, len(pl.specs))
	nodes := make([]refNode, len(pl.specs))
	reg := eng.Registry()
	for i, ps := range pl.specs {
		p, err := sess.Prepare(ps.spec(reg))
		if err != nil {
			return nil, prepareError(ps, err)
		}
		prepared[i] = p
		nodes[i] = nodeFromPrepared(ps.entry.index, p)
	}
	idx, err := checkRefs(nodes)
	if err != nil {
		return nil, err
	}
	if opts.OnStart != nil {
		opts.OnStart(pl.pre)
	}

	r := &runner{sess: sess, noop: opts.Noop, failOnError: m.failOnError, idx: idx, log: log, eng: eng, opts: opts, dir: m.workingDir}
	rep := &Report{PreMessage: pl.pre, Events: make([]*protocol.TransactionEvent, 0, len(prepared))}
	for i, p := range prepared {
		ev := r.apply(ctx, p, nodes[i])
		r.events = append(r.events, ev)
		r.all = append(r.all, ev)
		if opts.OnEvent != nil {
			opts.OnEvent(ev)
		}
	}
	rep.Events = r.all
	rep.Summary = Summarize(rep.Events, time.Since(start))
	if rep.Summary.Failed == 0 {
		rep.PostMessage = pl.post
	}
	return rep, nil
}

// prepareError names the resource (and its item) in an engine validation
// error and makes sure it wraps resources.ErrInvalid.
func prepareError(ps plannedSpec, err error) error {
	prefix := fmt.Sprintf("resources[%d] ", ps.entry.index)
	if !errors.Is(err, resources.ErrInvalid) {
		return invalidWith(err, "%s%s: %v", prefix, ps.label()[len(prefix):], err)
	}
	return fmt.Errorf("%s%w", prefix, err)
}

// runner applies prepared resources in order, honouring require,
// subscribe and fail_on_error.
type runner struct {
	sess        *engine.Session
	noop        bool
	failOnError bool
	idx         refIndex
	log         *slog.Logger
	events      []*protocol.TransactionEvent
	// all are the events of the report: events, each apply resource's
	// after those of its child manifest.
	all []*protocol.TransactionEvent
	// eng, opts and dir run child manifests of apply resources.
	eng  *engine.Engine
	opts RunOptions
	dir  string
	// failed is the ref of the first failed resource, "" while none failed.
	failed string
}

func (r *runner) apply(ctx context.Context, p *engine.Prepared, n refNode) *protocol.TransactionEvent {
	log := r.log.With("resource", p.Ref())
	if r.failOnError && r.failed != "" {
		log.Info("not applied: fail_on_error", "failed", r.failed)
		return r.skipped(p, nil, fmt.Sprintf("not applied: fail_on_error is set and %s failed", r.failed))
	}
	if err := ctx.Err(); err != nil {
		return r.skipped(p, nil, fmt.Sprintf("not applied: the run was stopped: %v", err))
	}
	if unmet := r.unmet(n.require); len(unmet) > 0 {
		log.Info("skipped: unmet requirements", "requirements", unmet)
		return r.skipped(p, unmet, "")
	}
	triggers := r.triggers(n.subscribe)
	var ev *protocol.TransactionEvent
	if p.Type.Name() == protocol.TypeApply && p.Managed {
		ev = r.applyChild(ctx, p)
	} else {
		ev = r.sess.Apply(ctx, p, engine.ApplyOptions{Refresh: len(triggers) > 0})
	}
	if len(triggers) > 0 {
		log.Info("subscribed resources changed", "changed", triggers, "refreshed", ev.Refreshed)
		if r.noop && ev.Refreshed {
			ev.NoopMessage = wouldRefresh(ev.NoopMessage, triggers)
			if ev.Status != nil {
				ev.Status.Common().NoopMessage = ev.NoopMessage
			}
		}
	}
	if ev.Failed && r.failed == "" {
		r.failed = p.Ref()
	}
	return ev
}

// wouldRefresh adds to a noop message which subscriptions would refresh the
// resource, so a noop run never reads as if they had changed.
func wouldRefresh(msg string, triggers []string) string {
	note := "would refresh: " + strings.Join(triggers, ", ") + " would change"
	if msg == "" {
		return strings.ToUpper(note[:1]) + note[1:]
	}
	return msg + " (" + note + ")"
}

// unmet returns the required refs whose resources failed or were skipped.
func (r *runner) unmet(require []string) []string {
	var out []string
	for _, ref := range require {
		ev := r.events[r.idx[ref]]
		if ev.Failed || ev.Skipped {
			out = append(out, ref)
		}
	}
	return out
}

// triggers returns the subscribed refs whose resources changed (under noop:
// would change).
func (r *runner) triggers(subscribe []string) []string {
	var out []string
	for _, ref := range subscribe {
		if r.events[r.idx[ref]].Changed {
			out = append(out, ref)
		}
	}
	return out
}

// skipped builds the event of a resource that was not applied: with unmet
// requirements, or with reason as its only error (fail_on_error, a stopped
// run). The provider is never called.
func (r *runner) skipped(p *engine.Prepared, unmet []string, reason string) *protocol.TransactionEvent {
	c := p.Properties.Common()
	ev := protocol.NewTransactionEvent(engine.NewID(), p.Type.Name(), c.Name, c.Alias)
	ev.RequestedEnsure = c.Ensure
	ev.Noop = r.noop
	ev.Skipped = true
	ev.Properties = p.Properties
	if rd, ok := p.Properties.(engine.Redactor); ok {
		ev.Properties = rd.Redacted()
	}
	if unmet != nil {
		ev.UnmetRequirements = unmet
	}
	if reason != "" {
		ev.Errors = []string{reason}
	}
	redact.Event(ev, p.Secrets())
	return ev
}
