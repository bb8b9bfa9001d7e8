package continuous

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ccm-fleet/ccm/registration"
	"github.com/ccm-fleet/ccm/resources/templates"
	"github.com/ccm-fleet/ccm/resources/templates/natskv"
	"github.com/ccm-fleet/ccm/sources"
	"github.com/ccm-fleet/ccm/trust/policy"
	"github.com/ccm-fleet/ccm/trust/scope"
)

// Options are the agent's collaborators. Config, Applier and Facts are
// required.
type Options struct {
	// Config is the validated configuration.
	Config *Config
	// Applier runs manifests.
	Applier Applier
	// Facts gathers this host's facts; called at most every
	// MinFactsInterval.
	Facts func(ctx context.Context) (map[string]any, error)
	// JS reaches obj:// bundles and kv:// data; nil without NATS.
	JS jetstream.JetStream
	// HTTP fetches http(s) bundles and data; nil uses a default client.
	HTTP *http.Client
	// Policy says which signers' bundles are applied and what they may
	// do; nil trusts no signer (only local files and pinned http(s)
	// bundles are applied).
	Policy *policy.Policy
	// Resolver finds commands and paths as they will run, for the
	// policy's scopes; zero means scope.HostResolver().
	Resolver *scope.Resolver
	// Auditor receives a line per bundle accepted or refused; nil
	// discards them.
	Auditor Auditor
	// RegistrationStream is the stream registrations() reads (default
	// registration.DefaultStream); without JS the function returns
	// ErrNoNATS.
	RegistrationStream string
	// Registrar, when set, publishes the register_when_stable entries of
	// stable resources and withdraws those of failed ones.
	Registrar Registrar
	// Metrics, when set, are updated.
	Metrics *Metrics
	// Identity names this host in audit lines.
	Identity string
	// Log receives progress; nil discards.
	Log *slog.Logger
	// PollInterval is how often remote sources are fetched again
	// (default PollInterval); a test seam.
	PollInterval time.Duration
	// Ready, when set, is called once the first apply of every source
	// that could be read is done.
	Ready func()
}

// Agent runs CCM's continuous agent loop.
type Agent struct {
	opts     Options
	cfg      *Config
	log      *slog.Logger
	resolver scope.Resolver
	fetcher  *sources.Fetcher
	data     *DataSource
	workers  []*worker
	trigger  chan *worker
	// tmplOpts are what manifests' templates see besides facts and data.
	tmplOpts []templates.Option
	// localTmplOpts are tmplOpts plus kvGet(), for manifests not signed
	// by a policy signer.
	localTmplOpts []templates.Option

	// facts and data are owned by Run's goroutine.
	facts     map[string]any
	factsTime time.Time
	extData   map[string]any

	// guards timers
	mu     sync.Mutex
	timers map[*worker]*time.Timer
	closed bool
}

// New checks the options and prepares the agent.
func New(opts Options) (*Agent, error) {
	if opts.Config == nil || opts.Applier == nil || opts.Facts == nil {
		return nil, errors.New("continuous agent: Config, Applier and Facts are required")
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = PollInterval
	}
	a := &Agent{
		opts:    opts,
		cfg:     opts.Config,
		log:     opts.Log,
		fetcher: &sources.Fetcher{JS: opts.JS, HTTP: opts.HTTP},
		timers:  map[*worker]*time.Timer{},
	}
	if opts.Resolver != nil {
		a.resolver = *opts.Resolver
	} else {
		a.resolver = scope.HostResolver()
	}
	if u := opts.Config.ExternalDataURL; u != "" {
		du, err := ParseDataURL(u)
		if err != nil {
			return nil, fmt.Errorf("%w: external_data_url: %w", ErrConfig, err)
		}
		a.data = &DataSource{URL: du, JS: opts.JS, HTTP: opts.HTTP, Log: opts.Log}
	}
	if opts.JS != nil {
		stream := opts.RegistrationStream
		if stream == "" {
			stream = registration.DefaultStream
		}
		a.tmplOpts = append(a.tmplOpts, templates.WithFunction("registrations", registrationsFunc(opts.JS, stream, &registration.Trust{JS: opts.JS, Stream: stream, Registry: true, Pinned: opts.Policy.RegistrationPublishers()}, opts.Log)))
		// kvGet() reads this host's buckets: only for what the host's own
		// configuration names (local files, pinned bundles), never for a
		// signed bundle, whose signer the policy judges resource by resource.
		a.localTmplOpts = append(slices.Clone(a.tmplOpts), templates.WithKV(natskv.New(opts.JS), 0))
	} else {
		a.tmplOpts = append(a.tmplOpts, templates.WithFunction("registrations", noRegistrationsFunc))
		a.localTmplOpts = a.tmplOpts
	}
	for _, s := range opts.Config.Sources() {
		a.workers = append(a.workers, newWorker(a, s))
	}
	a.trigger = make(chan *worker, 2*len(a.workers)+1)
	return a, nil
}

// Run applies every source, then keeps applying them every interval,
// runs health checks every health check interval and applies a changed
// remote source at once, until ctx ends. Applies run one at a time.
func (a *Agent) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		a.stopTimers()
		wg.Wait()
	}()

	a.refreshFacts(ctx, true)
	a.refreshData(ctx)

	// Remote sources are fetched once before the first apply, so it
	// applies what is there now.
	for _, w := range a.workers {
		if w.src.Remote() {
			_, _ = w.poll(ctx)
		}
	}
	for _, w := range a.workers {
		w.takePending()
		w.apply(ctx, false, true, TriggerStart)
	}
	if a.opts.Ready != nil {
		a.opts.Ready()
	}
	for _, w := range a.workers {
		if w.src.Remote() {
			wg.Add(1)
			go func() {
				defer wg.Done()
				w.watch(ctx)
			}()
		}
	}

	applyTicker := time.NewTicker(a.cfg.IntervalDuration())
	defer applyTicker.Stop()
	var healthC <-chan time.Time
	if d := a.cfg.HealthCheckDuration(); d > 0 {
		t := time.NewTicker(d)
		defer t.Stop()
		healthC = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case w := <-a.trigger:
			w.queued.Store(false)
			a.refreshFacts(ctx, false)
			a.refreshData(ctx)
			w.takePending()
			w.apply(ctx, false, true, TriggerChange)
		case <-applyTicker.C:
			a.refreshFacts(ctx, false)
			a.refreshData(ctx)
			for _, w := range a.workers {
				w.takePending()
				w.apply(ctx, false, false, TriggerSchedule)
			}
		case <-healthC:
			a.runHealthChecks(ctx)
		}
	}
}

// runHealthChecks runs every manifest's health checks alone (facts and
// data are not refreshed), then applies each manifest that had a CRITICAL
// check, once all checks are done.
func (a *Agent) runHealthChecks(ctx context.Context) {
	start := time.Now()
	var remediate []*worker
	for _, w := range a.workers {
		if w.apply(ctx, true, false, TriggerHealth) > 0 {
			remediate = append(remediate, w)
		}
	}
	if a.opts.Metrics != nil {
		a.opts.Metrics.healthDuration.WithLabelValues(fmt.Sprint(len(a.workers))).Observe(time.Since(start).Seconds())
	}
	for _, w := range remediate {
		a.log.Warn("a health check is CRITICAL: applying the manifest to remediate", "manifest", w.src.String())
		if a.opts.Metrics != nil {
			a.opts.Metrics.remediations.WithLabelValues(w.src.String()).Inc()
		}
		w.apply(ctx, false, true, TriggerRemediation)
	}
}

// refreshFacts gathers facts again unless they are younger than
// MinFactsInterval (always when force); on failure the last facts stay.
func (a *Agent) refreshFacts(ctx context.Context, force bool) {
	if !force && a.facts != nil && time.Since(a.factsTime) < MinFactsInterval {
		return
	}
	start := time.Now()
	f, err := a.opts.Facts(ctx)
	if m := a.opts.Metrics; m != nil {
		m.factsDuration.Observe(time.Since(start).Seconds())
		m.factsGatherDuration.Observe(time.Since(start).Seconds())
	}
	if err != nil {
		a.log.Error("could not gather facts: keeping the last ones", "error", err)
		if a.opts.Metrics != nil {
			a.opts.Metrics.factsErrors.Inc()
		}
		if a.facts == nil {
			a.facts = map[string]any{}
		}
		return
	}
	a.facts, a.factsTime = f, time.Now()
}

// refreshData resolves the external data again; on failure the last data
// stay.
func (a *Agent) refreshData(ctx context.Context) {
	if a.data == nil {
		return
	}
	start := time.Now()
	d, err := a.data.Resolve(ctx, a.facts)
	if m := a.opts.Metrics; m != nil {
		m.dataDuration.Observe(time.Since(start).Seconds())
	}
	if err != nil {
		a.log.Error("could not resolve external data: keeping the last data", "url", a.data.URL.String(), "error", err)
		if a.opts.Metrics != nil {
			a.opts.Metrics.dataErrors.WithLabelValues(a.data.URL.String()).Inc()
		}
		return
	}
	a.extData = d
}

// enqueue asks Run to apply w soon (once, however often asked before it
// does).
func (a *Agent) enqueue(w *worker) {
	if w.queued.Swap(true) {
		return
	}
	select {
	case a.trigger <- w:
	default:
		w.queued.Store(false)
	}
}

// retryLater enqueues w after d, replacing an earlier retry of w.
func (a *Agent) retryLater(w *worker, d time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return
	}
	if t := a.timers[w]; t != nil {
		t.Stop()
	}
	a.timers[w] = time.AfterFunc(d, func() { a.enqueue(w) })
}

// cancelRetry drops w's pending retry.
func (a *Agent) cancelRetry(w *worker) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if t := a.timers[w]; t != nil {
		t.Stop()
		delete(a.timers, w)
	}
}

func (a *Agent) stopTimers() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.closed = true
	for w, t := range a.timers {
		t.Stop()
		delete(a.timers, w)
	}
}

func (a *Agent) audit(rec *AuditRecord) {
	if a.opts.Auditor == nil {
		return
	}
	rec.Time = time.Now().UTC()
	rec.Identity = a.opts.Identity
	if err := a.opts.Auditor.Audit(rec); err != nil {
		a.log.Error("could not write an audit line", "subject", rec.Subject, "decision", rec.Decision, "error", err)
	}
}
