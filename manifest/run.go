package manifest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"strings"
	"time"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/applytype"
	"github.com/ccm-fleet/ccm/resources/engine"
	"github.com/ccm-fleet/ccm/resources/redact"
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

// Summary counts a run's events as CCM counts them. Total counts the
// resources that ran (were applied, or skipped for unmet requirements or
// control conditions); NotApplied the events of resources never reached
// because fail_on_error stopped the run after a failure or the run was
// stopped (see NotApplied), which CCM leaves out of its counts. Stable,
// Changed, Failed and Skipped partition Total by each event's outcome
// (under noop Changed counts the resources that would change; a refresh
// that changed nothing counts as changed); Refreshed counts the events
// with Refreshed set, whatever their outcome.
type Summary struct {
	Total      int           `json:"total"`
	NotApplied int           `json:"not_applied,omitempty"`
	Stable     int           `json:"stable"`
	Changed    int           `json:"changed"`
	Failed     int           `json:"failed"`
	Skipped    int           `json:"skipped"`
	Refreshed  int           `json:"refreshed"`
	Duration   time.Duration `json:"duration"`
}

// Summarize counts events.
func Summarize(events []*protocol.TransactionEvent, took time.Duration) Summary {
	s := Summary{Duration: took}
	for _, ev := range events {
		if NotApplied(ev) {
			s.NotApplied++
			continue
		}
		s.Total++
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

// notAppliedPrefix starts the one error of the event of a resource the run
// never reached (fail_on_error, or the run was stopped).
const notAppliedPrefix = "not applied: "

// NotApplied reports whether ev is the event of a resource the run never
// reached: fail_on_error stopped it after a failure, or its context was
// done. CCM stops there and counts nothing more; these events name what was
// left.
func NotApplied(ev *protocol.TransactionEvent) bool {
	return ev != nil && ev.Skipped && len(ev.UnmetRequirements) == 0 && len(ev.Errors) == 1 && strings.HasPrefix(ev.Errors[0], notAppliedPrefix)
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
	pr, err := prepareRun(eng, m, opts, applyDepth(ctx))
	if err != nil {
		return nil, err
	}
	return pr.run(ctx, start), nil
}

// preparedRun is a manifest ready to run: every resource prepared (and so
// judged by the run's Guard), every reference checked, and the same done
// for the child manifest of every apply resource it manages, recursively,
// before anything of it runs. The child manifests are read once: what was
// judged is what runs.
type preparedRun struct {
	m        *Manifest
	opts     RunOptions
	pl       *plan
	sess     *engine.Session
	prepared []*engine.Prepared
	nodes    []refNode
	idx      refIndex
	depth    int
	// children are the prepared child runs of the managed apply
	// resources, by their index in prepared; childErr the reason one
	// could not be prepared (read, nesting, templates, validation), which
	// fails that apply resource when it runs. A refusal by the Guard is
	// never kept here: it refuses the whole run.
	children map[int]*preparedRun
	childErr map[int]error
}

// prepareRun prepares m and, recursively, the child manifests of its apply
// resources. depth is how deeply m is nested in apply resources.
func prepareRun(eng *engine.Engine, m *Manifest, opts RunOptions, depth int) (*preparedRun, error) {
	pl, err := m.plan(opts)
	if err != nil {
		return nil, err
	}
	pr := &preparedRun{m: m, opts: opts, pl: pl, depth: depth,
		sess:     eng.NewSession(engine.RunOptions{Noop: opts.Noop, MonitorOnly: opts.MonitorOnly, Env: pl.env, WorkingDir: m.workingDir, Guard: opts.Guard, Prepared: opts.Prepared, DiffLimit: opts.DiffLimit, LogWith: opts.LogWith}),
		prepared: make([]*engine.Prepared, len(pl.specs)),
		nodes:    make([]refNode, len(pl.specs)),
	}
	reg := eng.Registry()
	for i, ps := range pl.specs {
		p, err := pr.sess.Prepare(ps.spec(reg))
		if err != nil {
			return nil, prepareError(ps, err)
		}
		pr.prepared[i] = p
		pr.nodes[i] = nodeFromPrepared(ps.entry.index, p)
	}
	autorequire(pr.prepared, pr.nodes)
	if pr.idx, err = checkRefs(pr.nodes); err != nil {
		return nil, err
	}
	return pr, pr.prepareChildren(eng)
}

// prepareChildren prepares the child manifest of every managed apply
// resource of pr. A child that the policy refuses refuses pr whole; a child
// whose path a file resource of pr writes is refused too, since the file
// judged would not be the file run.
func (pr *preparedRun) prepareChildren(eng *engine.Engine) error {
	written := map[string]string{}
	for _, p := range pr.prepared {
		if p.Type.Name() == protocol.TypeFile && p.Managed {
			written[filepath.Clean(p.Name())] = p.Ref()
		}
	}
	for i, p := range pr.prepared {
		if p.Type.Name() != protocol.TypeApply || !p.Managed {
			continue
		}
		props := p.Properties.(*applytype.Properties)
		path := filepath.Clean(applytype.ChildPath(props.Common().Name, pr.m.workingDir))
		if ref, ok := written[path]; ok {
			return invalidWith(resources.ErrInvalid, "%s: the child manifest %s is written by %s of the same manifest, so it would not be the manifest that was checked", p.Ref(), path, ref)
		}
		child, err := pr.prepareChild(eng, props, path)
		switch {
		case errors.Is(err, resources.ErrForbidden):
			return fmt.Errorf("%s: %w", p.Ref(), err)
		case err != nil:
			if pr.childErr == nil {
				pr.childErr = map[int]error{}
			}
			pr.childErr[i] = err
		default:
			if pr.children == nil {
				pr.children = map[int]*preparedRun{}
			}
			pr.children[i] = child
		}
	}
	return nil
}

// prepareChild reads and prepares the child manifest at path of the apply
// resource props: its data resolved as its own and the resource's data
// merged over it (the run's own Data still winning), in noop or
// health-check mode when the parent run or the resource asks.
func (pr *preparedRun) prepareChild(eng *engine.Engine, props *applytype.Properties, path string) (*preparedRun, error) {
	c := props.Common()
	depth := pr.depth + 1
	if depth > applytype.MaxDepth {
		return nil, fmt.Errorf("apply %s: %w: more than %d levels", c.Name, applytype.ErrTooDeep, applytype.MaxDepth)
	}
	child, err := Load(path)
	if err != nil {
		return nil, fmt.Errorf("apply %s: %w", c.Name, err)
	}
	if !props.NestedAllowed() && child.hasApply() {
		return nil, fmt.Errorf("apply %s: %w: allow_apply is false and the child manifest holds apply resources", c.Name, applytype.ErrNestedApply)
	}
	opts := pr.opts
	opts.Noop = pr.opts.Noop || props.Noop
	opts.MonitorOnly = pr.opts.MonitorOnly || props.HealthCheckOnly
	opts.OnStart = nil
	opts.Data = maps.Clone(props.Data)
	if opts.Data == nil {
		opts.Data = map[string]any{}
	}
	maps.Copy(opts.Data, pr.opts.Data)
	cr, err := prepareRun(eng, child, opts, depth)
	if err != nil {
		return nil, fmt.Errorf("apply %s: %w", c.Name, err)
	}
	return cr, nil
}

// run applies the prepared resources in order and returns the report.
func (pr *preparedRun) run(ctx context.Context, start time.Time) *Report {
	log := pr.opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With(pr.opts.LogWith...)
	if pr.opts.OnStart != nil {
		pr.opts.OnStart(pr.pl.pre, len(pr.prepared))
	}
	r := &runner{pr: pr, sess: pr.sess, noop: pr.opts.Noop, failOnError: pr.m.failOnError, idx: pr.idx, log: log}
	rep := &Report{PreMessage: pr.pl.pre, Events: make([]*protocol.TransactionEvent, 0, len(pr.prepared))}
	for i, p := range pr.prepared {
		ev := r.apply(ctx, i, p, pr.nodes[i])
		r.events = append(r.events, ev)
		r.all = append(r.all, ev)
		if pr.opts.OnEvent != nil {
			pr.opts.OnEvent(ev)
		}
	}
	rep.Events = r.all
	rep.Summary = Summarize(rep.Events, time.Since(start))
	if rep.Summary.Failed == 0 {
		rep.PostMessage = pr.pl.post
	}
	return rep
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
	// pr is the prepared run, with the child runs of apply resources.
	pr *preparedRun
	// failed is the ref of the first failed resource, "" while none failed.
	failed string
}

func (r *runner) apply(ctx context.Context, i int, p *engine.Prepared, n refNode) *protocol.TransactionEvent {
	log := r.log.With("resource", p.Ref())
	if r.failOnError && r.failed != "" {
		log.Info("not applied: fail_on_error", "failed", r.failed)
		return r.skipped(p, nil, fmt.Sprintf(notAppliedPrefix+"fail_on_error is set and %s failed", r.failed))
	}
	if err := ctx.Err(); err != nil {
		return r.skipped(p, nil, fmt.Sprintf(notAppliedPrefix+"the run was stopped: %v", err))
	}
	if unmet := r.unmet(n.require); len(unmet) > 0 {
		log.Info("skipped: unmet requirements", "requirements", unmet)
		return r.skipped(p, unmet, "")
	}
	triggers := r.triggers(n.subscribe)
	var ev *protocol.TransactionEvent
	if p.Type.Name() == protocol.TypeApply && p.Managed {
		ev = r.applyChild(ctx, i, p)
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
