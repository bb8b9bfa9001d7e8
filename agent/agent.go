package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ccm-fleet/ccm/continuous"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources/engine"
	"github.com/ccm-fleet/ccm/trust/scope"
)

// Agent serves fleet requests for one host over one NATS connection. A
// request goes through a pipeline of small parts: the dispatcher takes it
// off the subscriptions, admission (gate) checks it and makes it a job,
// the work queue holds it, the executor runs it and the finisher answers
// it. Assignment runs and watch repairs enter the same pipeline at the
// executor.
type Agent struct {
	cfg   Config
	nc    *nats.Conn
	log   *slog.Logger
	now   func() time.Time
	keys  *protocol.KeySigner
	facts *hostFacts
	gate  *admission
	queue *workQueue
	exec  *executor
	fin   *finisher
	// sources applies Config.Sources, nil without them
	sources *continuous.Agent
	// setup is what New was given and loaded, handed on to Run
	setup setup
}

// setup is what the options set and New loads before the agent runs.
type setup struct {
	version string
	ready   func()
	policy  *Policy
	// insecure is whether unsigned requests are accepted
	insecure bool
	// service is whether the agent registers as a NATS micro service
	service bool
	metrics *Metrics
	js      jetstream.JetStream
	// assignState is the assignment state file as loaded (see
	// loadAssignmentState), handed to the assigner
	assignState map[string]assignmentState
	// replay and audit are the stores admission and finish use, closed
	// when Run returns
	replay *replayCache
	audit  *auditLog
	// resolver finds commands and paths as they will run, for the
	// signers' scopes
	resolver scope.Resolver
	// sourceMetrics are CCM's metrics of Config.Sources' runs, nil when
	// not served
	sourceMetrics *continuous.Metrics
	// verifier checks the requests' signatures; nil makes the agent its
	// own (simulated agents share one, see withVerifier)
	verifier *protocol.Verifier
}

// Option configures an Agent.
type Option func(*Agent)

// WithLogger sets the logger; the default discards.
func WithLogger(l *slog.Logger) Option { return func(a *Agent) { a.log = l } }

// WithVersion sets the version the agent announces.
func WithVersion(v string) Option { return func(a *Agent) { a.setup.version = v } }

// WithReady sets a function called once the agent is subscribed and serving.
func WithReady(f func()) Option { return func(a *Agent) { a.setup.ready = f } }

// withVerifier makes the agent check signatures with v, which other agents
// may share: a Verifier is safe for concurrent use and only caches the
// signers' expanded public keys.
func withVerifier(v *protocol.Verifier) Option { return func(a *Agent) { a.setup.verifier = v } }

// WithPolicy sets the policy, taking precedence over Config.Policy.
func WithPolicy(p *Policy) Option { return func(a *Agent) { a.setup.policy = p } }

// FactsSource gathers the host's facts; it honours ctx.
type FactsSource func(ctx context.Context) (map[string]any, error)

// WithFactsSource sets how the agent gathers its facts again: every
// Config.FactsInterval and when RefreshFacts is called (ccm-agent run calls
// it on SIGHUP). Without one the facts given to New stay.
func WithFactsSource(f FactsSource) Option { return func(a *Agent) { a.facts.source = f } }

// WithService makes the agent register as the NATS micro service
// protocol.AgentServiceName while it runs (ccm-agent run does; simulated
// fleets do not, as each service costs ten subscriptions).
func WithService() Option { return func(a *Agent) { a.setup.service = true } }

// WithClock replaces time.Now, for tests.
func WithClock(now func() time.Time) Option { return func(a *Agent) { a.now = now } }

// New returns an agent for the host described by facts; cfg is completed
// with defaults and validated, and its identity (and site, when it has
// one) is written to facts.
func New(cfg Config, nc *nats.Conn, eng *engine.Engine, facts map[string]any, opts ...Option) (*Agent, error) {
	cfg = cfg.WithDefaults()
	if cfg.Identity == "" {
		id, _ := facts["identity"].(string)
		cfg.Identity = id
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if nc == nil || eng == nil {
		return nil, fmt.Errorf("%w: a NATS connection and an engine are required", ErrConfig)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("agent %s: %w", cfg.Identity, err)
	}
	a := &Agent{
		cfg:   cfg,
		nc:    nc,
		log:   slog.New(slog.DiscardHandler),
		now:   time.Now,
		facts: newHostFacts(cfg.Identity, cfg.Site, brokerSite(nc), facts),
		setup: setup{version: "development", js: js, resolver: scope.HostResolver()},
	}
	for _, o := range opts {
		o(a)
	}
	a.log = a.log.With("identity", cfg.Identity)
	if err := a.setup.open(cfg, a.now()); err != nil {
		return nil, err
	}
	if a.keys, err = loadKeys(cfg.StateDir); err != nil {
		a.setup.close()
		return nil, err
	}
	a.gate, a.fin, a.exec, a.queue = newPipeline(cfg, &a.setup, a.keys, a.facts, eng, a.log, a.now)
	if a.sources, err = newSources(a); err != nil {
		a.setup.close()
		return nil, err
	}
	return a, nil
}

// newPipeline builds the parts a job goes through: admission, the
// finisher, the executor and the work queue between them.
func newPipeline(cfg Config, st *setup, keys *protocol.KeySigner, facts *hostFacts, eng *engine.Engine, log *slog.Logger, now func() time.Time) (*admission, *finisher, *executor, *workQueue) {
	judge := &policyJudge{resolver: st.resolver}
	if st.verifier == nil {
		st.verifier = protocol.NewVerifier(signerKeys)
	}
	gate := &admission{
		identity: cfg.Identity, limits: protocol.Limits{MaxBytes: cfg.MaxRequestBytes},
		defaultTTL: cfg.DefaultTTL, skew: st.policy.Skew(),
		auth: trust{policy: st.policy, insecure: st.insecure, keys: st.verifier}, replay: st.replay, judge: judge, audit: st.audit,
		types: eng.Registry(), facts: facts.current, now: now,
	}
	exec := newExecutor(cfg, st, keys, eng, log, now)
	exec.judge, exec.facts, exec.skew = judge, facts.current, st.policy.Skew()
	fin := exec.fin
	queue := newWorkQueue(cfg.MaxConcurrent, cfg.QueueLength, func(ctx context.Context, r *job) { exec.run(ctx, r) }, st.metrics)
	return gate, fin, exec, queue
}

// newExecutor builds the executor of the agent of cfg and the finisher
// it answers through: history is recorded when st has JetStream.
func newExecutor(cfg Config, st *setup, keys *protocol.KeySigner, eng *engine.Engine, log *slog.Logger, now func() time.Time) *executor {
	stats := &Stats{}
	fin := &finisher{
		identity: cfg.Identity, keys: keys, replay: st.replay, audit: st.audit,
		stats: stats, metrics: st.metrics, log: log, now: now,
	}
	if st.js != nil {
		fin.history = newHistory(cfg, st.js, keys.PublicKey(), stats, log, now)
	}
	return &executor{identity: cfg.Identity, eng: eng, audit: st.audit, fin: fin, diffLimit: cfg.DiffMaxBytes, log: log, now: now}
}

// open loads the policy (unless one was given), the assignment state, the
// replay cache and the audit log.
func (st *setup) open(cfg Config, now time.Time) error {
	if st.policy == nil && cfg.Policy != "" {
		p, err := LoadPolicy(cfg.Policy)
		if err != nil {
			return err
		}
		st.policy = p
	}
	if st.policy != nil {
		if err := st.policy.Validate(); err != nil {
			return err
		}
	}
	st.insecure = cfg.Insecure || (st.policy != nil && st.policy.Insecure)
	var err error
	if st.assignState, err = loadAssignmentState(filepath.Join(cfg.StateDir, AssignmentStateFileName)); err != nil {
		return err
	}
	if st.replay, err = openReplayCache(filepath.Join(cfg.StateDir, ReplayFileName), DefaultReplayMaxEntries, DefaultReplayMaxBytes, now); err != nil {
		return err
	}
	auditPath := cfg.AuditLog
	if auditPath == "" {
		auditPath = filepath.Join(cfg.StateDir, AuditFileName)
	}
	if st.audit, err = openAuditLog(auditPath); err != nil {
		_ = st.replay.close()
		return err
	}
	return nil
}

// close closes the replay cache and the audit log.
func (st *setup) close() {
	_ = st.replay.close()
	_ = st.audit.close()
}

// loadKeys loads (or creates) the agent's key below stateDir, with which
// it signs replies.
func loadKeys(stateDir string) (*protocol.KeySigner, error) {
	kp, err := loadOrCreateKey(filepath.Join(stateDir, KeyFileName))
	if err != nil {
		return nil, err
	}
	k, err := protocol.NewKeySigner(kp)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrKey, err)
	}
	return k, nil
}

// PublicKey returns the agent's public key, with which it signs replies.
func (a *Agent) PublicKey() string { return a.keys.PublicKey() }

// Insecure reports whether the agent accepts unsigned requests.
func (a *Agent) Insecure() bool { return a.setup.insecure }

// Identity returns the agent's identity.
func (a *Agent) Identity() string { return a.cfg.Identity }

// Stats returns the agent's counters.
func (a *Agent) Stats() StatsSnapshot { return a.fin.stats.snapshot() }

// Subjects returns the request and discovery subjects the agent listens on.
func (a *Agent) Subjects() (requests, discovery []string) {
	requests = []string{protocol.RequestSubjectAll, protocol.RequestNodeSubject(a.cfg.Identity)}
	discovery = []string{protocol.DiscoverySubjectAll, protocol.DiscoveryNodeSubject(a.cfg.Identity)}
	scalar := a.facts.current().scalar
	for _, k := range a.cfg.SubjectFacts {
		v, ok := scalar[k]
		if !ok {
			continue
		}
		val := fmt.Sprint(v)
		requests = append(requests, protocol.RequestFactSubject(k, val))
		discovery = append(discovery, protocol.DiscoveryFactSubject(k, val))
	}
	return requests, discovery
}

// serve keeps the agent's facts, subscriptions and registry entry current
// until ctx is done, then removes the entry: it gathers the facts every
// FactsInterval (with a source), moves the subscriptions whenever the
// subject facts change, and puts the entry every heartbeat and whenever the
// facts change.
func (a *Agent) serve(ctx context.Context, subs *subscriptions, reg *registrar) {
	var tick <-chan time.Time
	if a.facts.source != nil {
		t := time.NewTicker(a.cfg.FactsInterval)
		defer t.Stop()
		tick = t.C
	}
	heartbeat := time.NewTimer(reg.next())
	defer heartbeat.Stop()
	for {
		select {
		case <-ctx.Done():
			reg.remove(context.WithoutCancel(ctx))
			return
		case <-heartbeat.C:
			_ = reg.put(ctx)
		case <-a.facts.changed:
			_ = reg.put(ctx)
		case <-tick:
			if err := a.RefreshFacts(ctx); err != nil {
				a.log.Warn("could not gather facts again; the previous ones stay", "error", err)
			}
		case <-a.facts.subjects:
			reqSubjects, discSubjects := a.Subjects()
			added, removed, err := subs.sync(append(slices.Clone(reqSubjects), discSubjects...))
			if err != nil {
				a.log.Error("could not move the subscriptions to the new facts", "error", err)
			} else if len(added)+len(removed) > 0 {
				a.log.Info("subject facts changed, subscriptions moved", "added", added, "removed", removed)
			}
		}
		heartbeat.Reset(reg.next())
	}
}

// onDiscovery answers a discovery request when the filter selects this host.
func (a *Agent) onDiscovery(m *nats.Msg) {
	if m.Reply == "" {
		return
	}
	req, err := protocol.DecodeDiscoveryRequest(m.Data, protocol.Limits{MaxBytes: a.cfg.MaxRequestBytes})
	if err != nil {
		a.log.Warn("ignored a malformed discovery request", "error", err)
		return
	}
	facts := a.facts.current()
	if req.Filter != nil && !req.Filter.Match(facts.all) {
		return
	}
	b, err := json.Marshal(&protocol.DiscoveryReply{
		Protocol:  protocol.DiscoveryReplyProtocol,
		RequestID: req.ID,
		Identity:  a.cfg.Identity,
		Facts:     protocol.AnnouncedFacts(req, facts.scalar, facts.all),
		Version:   a.setup.version,
		PublicKey: a.keys.PublicKey(),
		Started:   a.facts.started,
	})
	if err == nil {
		_ = publish(a.nc, m.Reply, signedHeader(a.keys, a.keys.Sign(b)), b)
	}
}

// unknownID is the id of a refused request that claims no valid id.
const unknownID = "unknown"

// looseID pulls a usable request id out of a request refused before it
// was decoded, so its reply can still be matched; unknownID otherwise.
func looseID(data []byte) string {
	var probe struct {
		ID string `json:"id"`
	}
	if len(data) <= protocol.DefaultMaxBytes && json.Unmarshal(data, &probe) == nil && protocol.ValidateRequestID(probe.ID) == nil {
		return probe.ID
	}
	return unknownID
}
