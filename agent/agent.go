package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ccm-fleet/ccm/agent/scope"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/engine"
)

// Agent serves fleet requests for one host over one NATS connection.
type Agent struct {
	cfg     Config
	nc      *nats.Conn
	js      jetstream.JetStream
	eng     *engine.Engine
	facts   atomic.Pointer[factSet]
	log     *slog.Logger
	version string
	now     func() time.Time
	started time.Time
	ready   func()
	stats   Stats
	metrics *Metrics
	history *history
	// factsChanged wakes the registrar after UpdateFacts, subjectsChanged
	// the loop that moves the subscriptions
	factsChanged    chan struct{}
	subjectsChanged chan struct{}
	// assignFacts wakes the assigner to select its assignments again
	assignFacts chan struct{}
	// factsSource gathers the host's facts again (nil: they are never
	// refreshed, as for simulated agents)
	factsSource FactsSource
	// service is whether the agent registers as a NATS micro service
	service bool

	// guards queue, closed, running and busy: requests are admitted
	// until Run closes the agent
	mu      sync.Mutex
	queue   chan *job
	closed  bool
	running int // workers running, at most MaxConcurrent
	busy    int // workers running a job
	// workers are the goroutines running requests: started as requests
	// are admitted, ended when the queue is empty, so an idle agent has
	// none
	workers sync.WaitGroup
	// jobsCtx is what running requests see; Run sets it before serving
	jobsCtx context.Context

	// policy is the signers the agent trusts (nil: none), insecure whether
	// unsigned requests are accepted
	policy   *Policy
	insecure bool
	// signer signs replies with the agent's key; publicKey is its public
	// part
	signer    *protocol.KeySigner
	publicKey string
	replay    *replayCache
	audit     *auditLog
	// assignState is the assignment state file as loaded (see
	// loadAssignmentState), handed to the assigner
	assignState map[string]assignmentState
	// resolver finds commands and paths as they will run, for the
	// signers' scopes
	resolver scope.Resolver
	// observePolicy, when set (tests only), sees every resource the policy
	// is asked about, at admission and as the engine will run it
	observePolicy func(requestID string, r policyResource)
}

// Option configures an Agent.
type Option func(*Agent)

// WithLogger sets the logger; the default discards.
func WithLogger(l *slog.Logger) Option { return func(a *Agent) { a.log = l } }

// WithVersion sets the version the agent announces.
func WithVersion(v string) Option { return func(a *Agent) { a.version = v } }

// WithReady sets a function called once the agent is subscribed and serving.
func WithReady(f func()) Option { return func(a *Agent) { a.ready = f } }

// WithPolicy sets the policy, taking precedence over Config.Policy.
func WithPolicy(p *Policy) Option { return func(a *Agent) { a.policy = p } }

// FactsSource gathers the host's facts; it honours ctx.
type FactsSource func(ctx context.Context) (map[string]any, error)

// WithFactsSource sets how the agent gathers its facts again: every
// Config.FactsInterval and when RefreshFacts is called (ccm-agent run calls
// it on SIGHUP). Without one the facts given to New stay.
func WithFactsSource(f FactsSource) Option { return func(a *Agent) { a.factsSource = f } }

// WithService makes the agent register as the NATS micro service
// protocol.AgentServiceName while it runs (ccm-agent run does; simulated
// fleets do not, as each service costs ten subscriptions).
func WithService() Option { return func(a *Agent) { a.service = true } }

// WithClock replaces time.Now, for tests.
func WithClock(now func() time.Time) Option { return func(a *Agent) { a.now = now } }

// New returns an agent for the host described by facts; cfg is completed
// with defaults and validated, and its identity is written to facts.
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
		cfg:          cfg,
		nc:           nc,
		js:           js,
		eng:          eng,
		log:          slog.New(slog.DiscardHandler),
		version:      "development",
		now:          time.Now,
		queue:        make(chan *job, cfg.QueueLength+cfg.MaxConcurrent),
		factsChanged: make(chan struct{}, 1),
		resolver:     scope.HostResolver(),

		subjectsChanged: make(chan struct{}, 1),
		assignFacts:     make(chan struct{}, 1),
	}
	a.facts.Store(newFactSet(cfg.Identity, facts))
	for _, o := range opts {
		o(a)
	}
	a.log = a.log.With("identity", cfg.Identity)
	if err := a.openSecurity(); err != nil {
		return nil, err
	}
	a.history = newHistory(cfg, js, a.publicKey, &a.stats, a.log, a.now)
	return a, nil
}

// openSecurity loads the policy (unless one was given), the agent's key,
// the replay cache and the audit log.
func (a *Agent) openSecurity() error {
	cfg := a.cfg
	if a.policy == nil && cfg.Policy != "" {
		p, err := LoadPolicy(cfg.Policy)
		if err != nil {
			return err
		}
		a.policy = p
	}
	if a.policy != nil {
		if err := a.policy.Validate(); err != nil {
			return err
		}
	}
	a.insecure = cfg.Insecure || (a.policy != nil && a.policy.Insecure)
	kp, err := loadOrCreateKey(filepath.Join(cfg.StateDir, KeyFileName))
	if err != nil {
		return err
	}
	if a.signer, err = protocol.NewKeySigner(kp); err != nil {
		return fmt.Errorf("%w: %w", ErrKey, err)
	}
	a.publicKey = a.signer.PublicKey()
	if a.assignState, err = loadAssignmentState(filepath.Join(cfg.StateDir, AssignmentStateFileName)); err != nil {
		return err
	}
	if a.replay, err = openReplayCache(filepath.Join(cfg.StateDir, ReplayFileName), DefaultReplayMaxEntries, DefaultReplayMaxBytes, a.now()); err != nil {
		return err
	}
	auditPath := cfg.AuditLog
	if auditPath == "" {
		auditPath = filepath.Join(cfg.StateDir, AuditFileName)
	}
	if a.audit, err = openAuditLog(auditPath); err != nil {
		_ = a.replay.close()
		return err
	}
	return nil
}

// PublicKey returns the agent's public key, with which it signs replies.
func (a *Agent) PublicKey() string { return a.publicKey }

// Insecure reports whether the agent accepts unsigned requests.
func (a *Agent) Insecure() bool { return a.insecure }

// Identity returns the agent's identity.
func (a *Agent) Identity() string { return a.cfg.Identity }

// Subjects returns the request and discovery subjects the agent listens on.
func (a *Agent) Subjects() (requests, discovery []string) {
	requests = []string{protocol.RequestSubjectAll, protocol.RequestNodeSubject(a.cfg.Identity)}
	discovery = []string{protocol.DiscoverySubjectAll, protocol.DiscoveryNodeSubject(a.cfg.Identity)}
	scalar := a.currentFacts().scalar
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

// Run subscribes and serves until ctx is done, then stops taking requests,
// lets accepted ones finish (up to the shutdown timeout, after which they
// are cancelled) and returns. Before it reports ready it puts the agent's
// node registry entry; it refreshes it every heartbeat and deletes it on
// the way out. Replies are recorded in the history stream, or kept in the
// spool until JetStream takes them.
func (a *Agent) Run(ctx context.Context) error {
	a.started = a.now().UTC()
	defer func() {
		_ = a.replay.close()
		_ = a.audit.close()
	}()
	switch {
	case a.insecure:
		a.log.Warn("INSECURE: this agent accepts unsigned requests from anyone who can publish to its subjects; configure a policy with trusted signers")
	case a.policy == nil || len(a.policy.Signers) == 0:
		a.log.Warn("no trusted signers: every request will be refused (configure a policy)")
	}
	jobsCtx, cancelJobs := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelJobs()

	histCtx, cancelHist := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelHist()
	histDone := make(chan struct{})
	go func() { defer close(histDone); a.history.run(histCtx) }()

	a.metrics.bind(a)
	// Requests the previous run stopped on are answered before new ones.
	a.recordInterrupted()

	reg := &registrar{a: a}
	reg.start(ctx)
	regDone := make(chan struct{})
	go func() { defer close(regDone); reg.run(ctx) }()

	a.jobsCtx = jobsCtx

	// Every request and discovery subscription feeds one channel read by
	// one goroutine, the dispatcher, however many subjects the agent
	// listens on (the micro service of WithService has its own).
	msgs := make(chan *nats.Msg, subscriptionBuffer)
	subs := newSubscriptions(a.nc, msgs)
	stopDispatch := make(chan struct{})
	dispatchDone := make(chan struct{})
	go func() {
		defer close(dispatchDone)
		a.dispatch(msgs, subs, stopDispatch)
	}()
	reqSubjects, discSubjects := a.Subjects()
	_, _, err := subs.sync(append(slices.Clone(reqSubjects), discSubjects...))
	if err != nil {
		err = fmt.Errorf("agent %s: %w", a.cfg.Identity, err)
	}
	if err == nil {
		if ferr := a.nc.FlushTimeout(10 * time.Second); ferr != nil {
			err = fmt.Errorf("agent %s: subscribe: %w", a.cfg.Identity, ferr)
		}
	}
	if err == nil && a.service {
		svc, serr := a.startService()
		if serr != nil {
			// Being listed by nats micro is a convenience: serve anyway.
			a.log.Warn("not registered as a NATS micro service", "error", serr)
		} else {
			defer func() { _ = svc.Stop() }()
		}
	}
	if err == nil {
		// The assigner follows the assignment store while the agent
		// serves; it counts as a worker, so the shutdown waits for its
		// run like for a request's.
		asg := newAssigner(a)
		a.workers.Add(1)
		go func() {
			defer a.workers.Done()
			asg.run(ctx, jobsCtx)
		}()
		a.log.Info("serving", "requests", reqSubjects)
		if a.ready != nil {
			a.ready()
		}
		a.serve(ctx, subs)
	}

	// Stop taking requests, handing what the subscriptions already hold to
	// the queue, then close it.
	for _, s := range subs.list() {
		_ = s.Drain()
	}
	drainBy := time.Now().Add(a.cfg.ShutdownTimeout)
	for _, s := range subs.list() {
		// Disconnected, a drain cannot finish: nothing more will arrive.
		for s.IsValid() && a.nc.IsConnected() && time.Now().Before(drainBy) {
			time.Sleep(5 * time.Millisecond)
		}
	}
	close(stopDispatch)
	<-dispatchDone
	a.mu.Lock()
	a.closed = true
	a.mu.Unlock()
	done := make(chan struct{})
	go func() { a.workers.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(a.cfg.ShutdownTimeout):
		a.log.Warn("shutdown timeout passed, cancelling running requests")
		cancelJobs()
		<-done
	}
	// Every reply is handed over: let the historian write (or spool) them.
	a.history.close()
	select {
	case <-histDone:
	case <-time.After(a.cfg.ShutdownTimeout):
		a.log.Warn("shutdown timeout passed, history records left for the spool")
		cancelHist()
		<-histDone
	}
	<-regDone
	return err
}

// serve keeps the agent's facts and subscriptions current until ctx is
// done: it gathers the facts every FactsInterval (with a source) and moves
// the subscriptions whenever the subject facts change.
func (a *Agent) serve(ctx context.Context, subs *subscriptions) {
	var tick <-chan time.Time
	if a.factsSource != nil {
		t := time.NewTicker(a.cfg.FactsInterval)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
			if err := a.RefreshFacts(ctx); err != nil {
				a.log.Warn("could not gather facts again; the previous ones stay", "error", err)
			}
		case <-a.subjectsChanged:
			reqSubjects, discSubjects := a.Subjects()
			added, removed, err := subs.sync(append(slices.Clone(reqSubjects), discSubjects...))
			if err != nil {
				a.log.Error("could not move the subscriptions to the new facts", "error", err)
				continue
			}
			if len(added)+len(removed) > 0 {
				a.log.Info("subject facts changed, subscriptions moved", "added", added, "removed", removed)
			}
		}
	}
}

// Admission bounds. A burst is taken off the subscription at once and
// waits in the agent's backlog, where every request is admitted in turn
// and answered (run, busy or refused); only past the backlog's bounds is a
// request answered busy without its checks.
const (
	// subscriptionBuffer is how many received messages the subscriptions
	// hold for the dispatcher; beyond it NATS drops them (a slow
	// consumer). The dispatcher empties it between two admissions.
	subscriptionBuffer = 1024
	// maxBacklog and maxBacklogBytes bound the messages waiting for
	// admission.
	maxBacklog      = 100000
	maxBacklogBytes = 64 << 20
	// dropCheckInterval is how often the subscriptions are asked how many
	// messages NATS dropped; each subject that lost some is logged once
	// per interval.
	dropCheckInterval = 5 * time.Second
)

// dispatch admits each message on msgs in arrival order: requests through
// onRequest, the discovery subjects through onDiscovery. Between two
// admissions it moves whatever arrived into its backlog, so a burst never
// fills the subscription. When stop is closed it handles what msgs and the
// backlog hold and returns.
func (a *Agent) dispatch(msgs chan *nats.Msg, subs *subscriptions, stop chan struct{}) {
	var backlog []*nats.Msg
	backlogBytes := 0
	take := func(m *nats.Msg) {
		if len(backlog) >= maxBacklog || backlogBytes+len(m.Data) > maxBacklogBytes {
			a.overflow(m)
			return
		}
		backlog = append(backlog, m)
		backlogBytes += len(m.Data)
	}
	handle := func(m *nats.Msg) {
		if isDiscovery(m) {
			a.onDiscovery(m)
			return
		}
		a.onRequest(m)
	}
	ticker := time.NewTicker(dropCheckInterval)
	defer ticker.Stop()
	dropped := map[*nats.Subscription]int{}
	stopping := false
	for {
	drain:
		for {
			select {
			case m := <-msgs:
				take(m)
			default:
				break drain
			}
		}
		if len(backlog) == 0 {
			if stopping {
				return
			}
			if cap(backlog) > subscriptionBuffer {
				backlog = nil // a burst's array is not kept
			}
			select {
			case m := <-msgs:
				take(m)
			case <-ticker.C:
				a.countDropped(subs, dropped)
			case <-stop:
				stopping = true
			}
			continue
		}
		m := backlog[0]
		backlog[0] = nil
		backlog = backlog[1:]
		backlogBytes -= len(m.Data)
		handle(m)
		select {
		case <-ticker.C:
			a.countDropped(subs, dropped)
		default:
		}
	}
}

// overflow answers a request that found the backlog full busy, without
// its checks (there is no time for them); a discovery request is not
// answered.
func (a *Agent) overflow(m *nats.Msg) {
	r := a.newFleetJob(m)
	claimID(r, m.Data)
	a.refusef(r, protocol.CodeBusy, "more than %d requests (%d bytes) wait for admission", maxBacklog, maxBacklogBytes)
}

// countDropped adds the messages NATS dropped on each subscription since
// the last call (last holds the previous counts) to the stats and metrics,
// and logs each subject that lost some.
func (a *Agent) countDropped(subs *subscriptions, last map[*nats.Subscription]int) {
	current := subs.list()
	for _, s := range current {
		n, err := s.Dropped()
		if err != nil || n <= last[s] {
			continue
		}
		a.stats.dropped.Add(int64(n - last[s]))
		a.metrics.dropped(n - last[s])
		a.log.Error("NATS dropped messages for this agent (slow consumer): their requesters get no reply", "subject", s.Subject, "dropped", n-last[s])
		last[s] = n
	}
	for s := range last {
		if !slices.Contains(current, s) {
			delete(last, s)
		}
	}
}

// enqueue queues an admitted request unless the agent is stopping or
// QueueLength requests already wait (ones a free worker is about to take do
// not count), and starts a worker for it when fewer than MaxConcurrent run.
func (a *Agent) enqueue(r *job) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed || len(a.queue) >= a.cfg.QueueLength+a.cfg.MaxConcurrent-a.busy {
		return false
	}
	a.queue <- r // never blocks: the queue holds QueueLength+MaxConcurrent
	a.metrics.queueDepth(len(a.queue))
	if a.running < a.cfg.MaxConcurrent {
		a.running++
		a.workers.Add(1)
		go a.work()
	}
	return true
}

// work runs queued requests until the queue is empty.
func (a *Agent) work() {
	defer a.workers.Done()
	for {
		a.mu.Lock()
		select {
		case r := <-a.queue:
			a.busy++
			a.mu.Unlock()
			a.run(a.jobsCtx, r)
			a.mu.Lock()
			a.busy--
			a.mu.Unlock()
		default:
			a.running--
			a.mu.Unlock()
			return
		}
	}
}

// run does an admitted job, whatever brought it (a fleet request, an
// assignment's schedule, a watch repair), in one order: its audit line
// (accepted; refused internal when it cannot be written, as nothing runs
// unaudited), the run, its answer (finish). It returns the reply, nil when
// the job did not run.
func (a *Agent) run(ctx context.Context, r *job) *protocol.FleetReply {
	r.audit.Decision = DecisionAccepted
	if err := a.audit.write(&r.audit); err != nil {
		a.log.Error("not running a request: the audit log cannot be written", "request", r.id(), "error", err)
		a.refuse(r, protocol.NewError(protocol.CodeInternal, "audit log unavailable"))
		return nil
	}
	reply := a.execute(ctx, r)
	if s, ok := r.respond.(settler); ok {
		s.settle(reply)
	}
	a.finish(r, reply)
	return reply
}

// execute runs one admitted job, the body parsed at admission, and
// returns its reply.
func (a *Agent) execute(ctx context.Context, r *job) *protocol.FleetReply {
	started := a.now()
	reply := protocol.NewFleetReply(r.id(), a.cfg.Identity, started)
	a.metrics.queueDepth(len(a.queue))
	defer func() { reply.Duration = a.now().Sub(started) }()
	if skew := a.policy.Skew(); started.After(r.deadline.Add(skew)) {
		reply.Error = protocol.NewError(protocol.CodeExpired, "request expired at %s before it could start (max_clock_skew %s)", r.deadline.Format(time.RFC3339), skew)
		return reply
	}
	if r.body.ensure == nil {
		a.runManifest(ctx, r, reply)
		return reply
	}
	// Remote requests see facts only: no environment, no files.
	opts := engine.RunOptions{Noop: r.noop, Env: a.currentFacts().env, Guard: a.guard(r), DiffLimit: a.cfg.DiffMaxBytes}
	ev, err := a.eng.Ensure(ctx, opts, *r.body.ensure)
	if err != nil {
		reply.Error = protocol.NewError(runErrorCode(err), "%s", err)
		return reply
	}
	reply.Events = append(reply.Events, ev)
	return reply
}

// runErrorCode classifies the error of a run that could not start: the
// policy refused a resource as it would run (forbidden), or the request is
// invalid (bad_request).
func runErrorCode(err error) protocol.Code {
	if errors.Is(err, resources.ErrForbidden) {
		return protocol.CodeForbidden
	}
	return protocol.CodeBadRequest
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
	facts := a.currentFacts()
	if req.Filter != nil && !req.Filter.Match(facts.all) {
		return
	}
	b, err := json.Marshal(&protocol.DiscoveryReply{
		Protocol:  protocol.DiscoveryReplyProtocol,
		RequestID: req.ID,
		Identity:  a.cfg.Identity,
		Facts:     facts.scalar,
		Version:   a.version,
		PublicKey: a.publicKey,
		Started:   a.started,
	})
	if err == nil {
		_ = a.publishSigned(m.Reply, b, a.signer.Sign(b))
	}
}

// encodeReply encodes and signs r; nil when it cannot be encoded.
func (a *Agent) encodeReply(r *protocol.FleetReply) (data []byte, sig string) {
	b, what, err := shrinkReply(r, protocol.MaxWholeBytes)
	if what != "" {
		a.log.Warn("a reply was too large to keep whole", "request", r.RequestID, "limit", protocol.MaxWholeBytes, "shrunk", what)
	}
	if err != nil {
		a.log.Error("could not encode a reply", "request", r.RequestID, "error", err)
		return nil, ""
	}
	return b, a.signer.Sign(b)
}

// publishSigned publishes body on subject with its signature headers.
func (a *Agent) publishSigned(subject string, body []byte, sig string) error {
	return publish(a.nc, subject, a.signedHeader(sig), body)
}

// looseID pulls a usable request id out of a request that failed to decode,
// so its bad_request reply can still be matched; "unknown" otherwise.
func looseID(data []byte) string {
	var probe struct {
		ID string `json:"id"`
	}
	if len(data) <= protocol.DefaultMaxBytes && json.Unmarshal(data, &probe) == nil && protocol.ValidateRequestID(probe.ID) == nil {
		return probe.ID
	}
	return "unknown"
}
