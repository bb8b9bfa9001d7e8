package agent

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ccm-fleet/ccm/continuous"
	"github.com/ccm-fleet/ccm/manifest"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/registration"
	"github.com/ccm-fleet/ccm/trust/policy"
)

// SourcesCacheDir is where remote bundles of Config.Sources are unpacked
// when the sources give no cache_dir: below the state directory.
const SourcesCacheDir = "sources"

// validateSources fills in the defaults of the manifest sources of
// `ccm-agent run` and checks them: CCM's agent configuration keys, less
// nats_context and monitor_port (the agent has one NATS connection and
// serves its metrics on metrics_listen).
func validateSources(s *continuous.Config, stateDir string) error {
	if s.MonitorPort != 0 {
		return fmt.Errorf("%w: sources.monitor_port: the agent's metrics, the sources' included, are served on metrics_listen", ErrConfig)
	}
	if s.NATSContext != "" && s.NATSContext != continuous.DefaultNATSContext {
		return fmt.Errorf("%w: sources.nats_context: the sources use the agent's own NATS connection", ErrConfig)
	}
	if s.CacheDir == "" {
		s.CacheDir = filepath.Join(stateDir, SourcesCacheDir)
	}
	if err := s.Validate(); err != nil {
		return fmt.Errorf("%w: sources: %w", ErrConfig, err)
	}
	return nil
}

// WithSourceMetrics makes the manifest sources' runs also update CCM's
// choria_ccm_* metrics (those `ccm-agent agent` serves); their runs are
// counted in the agent's own metrics either way.
func WithSourceMetrics(m *continuous.Metrics) Option {
	return func(a *Agent) { a.setup.sourceMetrics = m }
}

// newSources builds the continuous agent of a's Config.Sources: its
// applies run through a's pipeline (sourceApplier), with its facts, its
// policy, its audit log and its NATS connection; nil without sources.
func newSources(a *Agent) (*continuous.Agent, error) {
	cfg := a.cfg.Sources
	if cfg == nil || len(cfg.Sources()) == 0 {
		return nil, nil
	}
	var registrar continuous.Registrar
	if cfg.Registration != "" {
		registrar = &continuous.StreamRegistrar{JS: a.setup.js, Stream: registration.DefaultStream, Signer: a.keys, Core: cfg.Registration == continuous.RegistrationNATS, Host: a.cfg.Identity}
	}
	return continuous.New(continuous.Options{
		Config:    cfg,
		Applier:   &sourceApplier{x: a.exec, jobs: func() context.Context { return a.queue.ctx }},
		Facts:     func(context.Context) (map[string]any, error) { return a.facts.current().all, nil },
		JS:        a.setup.js,
		Policy:    a.setup.policy,
		Resolver:  &a.setup.resolver,
		Auditor:   sourceAuditor{a.setup.audit},
		Registrar: registrar,
		Metrics:   a.setup.sourceMetrics,
		Identity:  a.cfg.Identity,
		Log:       a.log.With("component", "sources"),
	})
}

// goSources runs a's manifest sources, counted as a worker, until ctx
// ends (a run that started finishes first).
func goSources(ctx context.Context, a *Agent) {
	if a.sources == nil {
		return
	}
	a.queue.workers.Add(1)
	go func() {
		defer a.queue.workers.Done()
		_ = a.sources.Run(ctx)
	}()
}

// sourceAuditor writes the continuous agent's lines (bundles taken and
// refused) to the agent's audit log.
type sourceAuditor struct{ w auditor }

func (s sourceAuditor) Audit(rec *AuditRecord) error { return s.w.write(rec) }

// sourceApplier runs a manifest source's applies as jobs of the agent's
// pipeline (its executor x), answered into history only (when x records
// history); health-check-only runs go to the engine alone (they change
// nothing and are not recorded).
type sourceApplier struct {
	x *executor
	// jobs, when set, gives the context a started run goes on (the
	// agent's jobs context: a run finishes as a fleet request's does when
	// the agent stops); nil or giving nil, the run goes on Apply's
	jobs func() context.Context
}

var _ continuous.Applier = (*sourceApplier)(nil)

// Apply runs m as a job: an audit line, the run, its history record
// (marked with the source and trigger) and the agent's metrics.
func (s *sourceApplier) Apply(ctx context.Context, m *manifest.Manifest, opts continuous.ApplyOptions) (*manifest.Report, error) {
	x := s.x
	q, key := x.journal, sourceKey(opts.Source)
	if opts.MonitorOnly {
		if q.held(key, opts.Version) != nil {
			return nil, fmt.Errorf("manifest %s: quarantined: its health checks are not run either", opts.Source)
		}
		rep, err := manifest.Run(ctx, x.eng, m, sourceRunOptions(x, opts))
		if rep != nil {
			x.fin.metrics.checked(rep.Events)
		}
		return rep, err
	}
	started := x.now()
	r, run := newSourceJob(x, m, opts, started)
	if e := q.held(key, opts.Version); e != nil {
		msg := e.reason(key)
		if q.firstReport(key, opts.Version) {
			r.log.Error("manifest source not applied: quarantined", "sha256", opts.Version, "error", msg)
			x.fin.refuse(r, protocol.NewError(protocol.CodeQuarantined, "%s", msg))
		}
		return nil, fmt.Errorf("manifest %s: %s", opts.Source, msg)
	}
	if _, err := q.begin(key, 0, opts.Version, "", started); err != nil {
		r.log.Error("manifest source not applied: its start could not be journaled", "error", err)
		x.fin.refuse(r, protocol.NewError(protocol.CodeInternal, "not run: the start of the run could not be journaled (%s)", err))
		return nil, fmt.Errorf("manifest %s: not run: %w", opts.Source, err)
	}
	r.log.Info("applying a manifest source", "trigger", opts.Trigger)
	if s.jobs != nil {
		if jobs := s.jobs(); jobs != nil {
			ctx = jobs
		}
	}
	ran := x.run(ctx, r)
	if err := q.finish(key, opts.Version); err != nil {
		r.log.Error("could not journal the end of a manifest source's run: a restart counts it as a stop", "error", err)
	}
	if ran == nil && run.err == nil {
		return nil, fmt.Errorf("manifest %s: not run: the audit log cannot be written", opts.Source)
	}
	return run.report, run.err
}

// newSourceJob is the job of one run of a manifest source's manifest m,
// started at started, with its audit line and the history request its
// record answers.
func newSourceJob(x *executor, m *manifest.Manifest, opts continuous.ApplyOptions, started time.Time) (*job, *sourceRun) {
	id := sourceRunID()
	run := &sourceRun{source: opts.Source, trigger: opts.Trigger, opts: opts}
	b, _ := newBody(policy.ManifestBody(nil, m), nil)
	r := &job{
		received: started,
		deadline: started.Add(protocol.MaxFleetTTL),
		body:     b,
		record:   x.fin.history != nil,
		respond:  run,
		source:   run,
	}
	r.audit = AuditRecord{Time: started.UTC(), RequestID: id, Subject: opts.Source, Identity: x.identity, Signer: opts.Signer, Resources: b.refs()}
	hr := &protocol.HistoryRequest{
		Protocol: protocol.HistoryRequestProtocol, RequestID: id, Created: started.UTC(),
		Discovery: protocol.DiscoverySource, Expected: []string{x.identity}, TTL: protocol.Duration(protocol.MaxFleetTTL),
		Manifest: opts.Source, Trigger: opts.Trigger,
	}
	if data, err := json.Marshal(hr); err == nil {
		run.request = string(data)
	}
	r.logAs(x.log, "manifest", opts.Source)
	return r, run
}

// sourceRunOptions are the manifest run options of a source's run
// through x.
func sourceRunOptions(x *executor, opts continuous.ApplyOptions) manifest.RunOptions {
	return manifest.RunOptions{
		MonitorOnly:     opts.MonitorOnly,
		Facts:           opts.Facts,
		Data:            opts.Data,
		Guard:           opts.Guard,
		Prepared:        opts.Prepared,
		TemplateOptions: opts.TemplateOptions,
		Log:             x.log.With("manifest", opts.Source),
		DiffLimit:       x.diffLimit,
	}
}

// runSource runs a source's job in place (its manifest's files are where
// its source keeps them) and keeps the report for the continuous agent.
func (x *executor) runSource(ctx context.Context, r *job, reply *protocol.FleetReply) {
	run := r.source
	opts := sourceRunOptions(x, run.opts)
	opts.Log, opts.LogWith = x.log, r.logWith
	rep, err := manifest.Run(ctx, x.eng, r.body.manifest, opts)
	run.report, run.err = rep, err
	if err != nil {
		reply.Error = protocol.Wrapf(runErrorCode(err), err, "%s", manifestMessage(err))
		return
	}
	reply.Events = append(reply.Events, rep.Events...)
}

// sourceRun answers a source's apply: into history only, its record
// marked with the source and trigger; it keeps the run's report.
type sourceRun struct {
	source, trigger string
	// request is the run's HistoryRequest, encoded
	request string
	opts    continuous.ApplyOptions
	// report and err are the run's, for the continuous agent
	report *manifest.Report
	err    error
}

var _ responder = (*sourceRun)(nil)

func (*sourceRun) respond(*job, []byte, string) {}

func (s *sourceRun) mark(h nats.Header) {
	h.Set(protocol.HeaderSource, s.source)
	h.Set(protocol.HeaderTrigger, s.trigger)
	if s.request != "" {
		h.Set(protocol.HeaderRequest, s.request)
	}
}

// sourceRunID is a new request id of a source's run.
func sourceRunID() string {
	var b [10]byte
	_, _ = rand.Read(b[:])
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	var sb strings.Builder
	sb.WriteString("source_")
	for _, c := range b {
		sb.WriteByte(alphabet[int(c)%len(alphabet)])
	}
	return sb.String()
}
