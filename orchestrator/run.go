package orchestrator

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ccm-fleet/ccm/protocol"
)

// Run applies req.Ensure or req.Manifest on the hosts the request selects
// and collects the replies:
//
//  1. The expected set is req.Hosts, or the filter's exact --host
//     identities when it has no --where terms, or else what discovery finds
//     (the node registry or a broadcast round, see DiscoveryMode), then
//     narrowed by req.Narrow (listed hosts, a seeded sample; see
//     Request.Narrow), in which case it always travels as the targets. An
//     empty set gives a Result with exit code 4 and nothing is sent. Otherwise the
//     request is recorded in history (a failure to do so is reported in
//     Result.HistoryError; with Async it is an error and nothing is sent).
//  2. Without batching, one fleet request goes out at once: on one node
//     subject per host when at most SmallSet hosts are expected (the
//     request then lists them as targets), else on the fact subject of an
//     equality in the filter on a subject fact, else on ccm.v1.req.all.
//     With batching, each host is sent the request on its node subject,
//     targeted to it alone, as a slot of the sliding window frees up.
//  3. Replies are decoded strictly and matched to the expected set until
//     every asked host replied or passed its deadline (req.Timeout after it
//     was asked). With Async, Run returns once the request is sent, and
//     the replies land in history only.
//  4. When the connection drops and comes back during the collection, the
//     replies sent meanwhile are lost, but the agents record them in
//     history: from then on the run's history records are read every
//     second and the asked hosts that have not replied are taken from
//     them (verified like live replies, a host counting once; their
//     HostResult.Source is SourceHistory), until every asked host is
//     accounted for or its deadline passed. A request the server did not
//     confirm receiving is reported in Result.Unconfirmed.
//
// The error is non-nil for an invalid request (ErrInvalid), a failure to
// subscribe or send (ErrPublish), or ctx ending; in the last two cases the
// Result collected so far is returned with it.
func (c *Client) Run(ctx context.Context, req Request) (*Result, error) {
	started := time.Now()
	req, err := req.normalize()
	if err != nil {
		return nil, err
	}
	id := newRequestID()
	body, names, err := req.body(id)
	if err != nil {
		return nil, err
	}
	res := &Result{RequestID: id, Noop: req.Noop, Async: req.Async, TemplateFacts: req.templateFacts()}

	expected, explicit := req.explicitHosts()
	keys := map[string]string{}
	res.Discovery = protocol.DiscoveryHosts
	if !explicit {
		nodes, source, fallback, err := c.discoverFrom(ctx, id, DiscoverOptions{Filter: req.Filter, Timeout: req.DiscoveryTimeout, Quiet: req.DiscoveryQuiet, Mode: req.Discovery})
		if err != nil {
			return nil, fmt.Errorf("run %s: %w", id, err)
		}
		res.Discovery, res.DiscoveryFallback = source, fallback
		res.facts = make(map[string]map[string]any, len(nodes))
		for _, n := range nodes {
			expected = append(expected, n.Identity)
			res.facts[n.Identity] = n.Facts
			if n.PublicKey != "" {
				keys[n.Identity] = n.PublicKey
			}
		}
	} else {
		keys = c.registryKeys(ctx, expected, req.DiscoveryTimeout)
	}
	if req.Narrow.active() {
		expected, res.Sample = req.Narrow.Apply(expected)
	}
	if req.targeted() && len(expected) > protocol.MaxTargets {
		return nil, fmt.Errorf("%w: %d hosts to list as targets, the limit is %d: narrow the selection", ErrInvalid, len(expected), protocol.MaxTargets)
	}
	res.Expected = expected
	if len(expected) == 0 {
		res.finish(nil, names, started)
		return res, nil
	}

	if err := c.recordRequest(ctx, id, &req, res); err != nil {
		if req.Async {
			return nil, fmt.Errorf("run %s: %w", id, err)
		}
		res.HistoryError = err.Error()
		c.log.Warn("the request is not recorded in history", "request", id, "error", err)
	}
	if req.Async {
		if err := c.sendAsync(id, &req, body, expected); err != nil {
			return nil, fmt.Errorf("run %s: %w", id, err)
		}
		res.finish(nil, names, started)
		return res, nil
	}

	in, err := openInbox(c.nc, c.hostKeys)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", id, err)
	}
	defer in.close()

	r := newRunner(c, req, id, expected, in)
	r.manifest = body
	r.keys = keys
	err = r.loop(ctx)
	in.close()
	res.NotAsked = r.queue
	res.Unexpected = r.unexpected
	res.Duplicates, res.Late, res.Malformed = r.duplicates, len(r.lateHosts), r.malformed
	res.LateHosts = r.lateHosts
	res.Spoofed, res.Unverified = r.spoofed, r.unverified
	res.Reconnects = r.rc.reconnects
	res.Unconfirmed = r.unconfirmedNoReply()
	in.parts.close()
	r.noteIncomplete(time.Now())
	res.Incomplete = r.incompleteNoResult()
	if err != nil && ctx.Err() != nil {
		r.interrupted = true
		res.Interrupted = true
		res.Running = r.running()
	}
	res.finish(r.results(), names, started)
	if res.Interrupted {
		res.ExitCode = protocol.ExitInterrupted
		return res, fmt.Errorf("run %s: %w: %w", id, ErrInterrupted, err)
	}
	if err != nil {
		return res, fmt.Errorf("run %s: %w", id, err)
	}
	return res, nil
}

// finish completes a result: lists never nil, sorted, summarized.
func (r *Result) finish(hosts []HostResult, names *refNamer, started time.Time) {
	r.Hosts = hosts
	r.NoReply = nil
	r.Replied = 0
	for _, h := range hosts {
		if h.Outcome == OutcomeNoReply {
			r.NoReply = append(r.NoReply, h.Identity)
		} else {
			r.Replied++
		}
	}
	for _, l := range []*[]string{&r.Expected, &r.NoReply, &r.Unexpected, &r.NotAsked, &r.LateHosts} {
		if *l == nil {
			*l = []string{}
		}
		slices.Sort(*l)
	}
	slices.Sort(r.Unconfirmed)
	slices.Sort(r.Running)
	r.NoReplyBySite = BySite(r.NoReply, r.facts)
	if r.Hosts == nil {
		r.Hosts = []HostResult{}
	}
	r.summarize(names)
	r.Elapsed = time.Since(started)
}

// MaxUnexpected bounds Result.Unexpected; further unasked hosts are logged
// and dropped.
const MaxUnexpected = 1000

// hostState tracks one expected host through a run.
type hostState struct {
	id       string
	asked    bool
	deadline time.Time
	result   *HostResult // set when the host replied
	timedOut bool
	late     bool // replied after its deadline
}

func (h *hostState) finished() bool { return h.result != nil || h.timedOut }

// runner sends one request and collects its replies. It is used by one
// goroutine, the caller of Run.
type runner struct {
	c   *Client
	req Request
	id  string
	in  *inbox
	// manifest is the encoded manifest bundle, when the body is one
	manifest json.RawMessage

	hosts    map[string]*hostState
	expected []string
	queue    []string     // not asked yet, in order
	inflight []*hostState // asked, by deadline (send order)
	pending  int          // asked and not finished
	free     int          // free window slots
	refills  []time.Time  // when slots freed during BatchSleep come back
	failures int
	stopped  bool
	replied  int

	unexpected            []string
	seenUnexpected        map[string]bool
	lateHosts             []string
	duplicates, malformed int
	// keys are the public keys of the expected hosts that have one
	keys                map[string]string
	spoofed, unverified int
	// rc reads history after a reconnect; set by loop
	rc *reconciler
	// unconfirmed are the hosts whose request was not confirmed flushed
	unconfirmed []string
	// incomplete are the replies (live or recorded) that did not arrive
	// whole
	incomplete []incompleteReply
	// interrupted is set when the caller's context ended the collection:
	// the asked hosts still within their deadline are running, not
	// silent
	interrupted bool
}

func newRunner(c *Client, req Request, id string, expected []string, in *inbox) *runner {
	r := &runner{
		c: c, req: req, id: id, in: in,
		hosts:          make(map[string]*hostState, len(expected)),
		expected:       expected,
		queue:          slices.Clone(expected),
		free:           req.window(len(expected)),
		seenUnexpected: map[string]bool{},
	}
	for _, h := range expected {
		r.hosts[h] = &hostState{id: h}
	}
	return r
}

// loop sends and collects until every asked host finished and nothing is
// left to send.
//
// While the connection is down, replies sent to the inbox are lost (core
// NATS keeps nothing for a subscriber that is away); the agents record
// them in history all the same. So once the connection is back, the
// reconciler reads the run's history records every reconcileInterval and
// takes those of the asked hosts that have not replied, verified like a
// live reply, until every asked host is accounted for or its deadline
// passed.
func (r *runner) loop(ctx context.Context) error {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	r.rc = newReconciler(r.c, r.id)
	defer r.rc.stop()
	first := true
	for {
		if err := r.dispatch(); err != nil {
			return err
		}
		if first && r.req.Progress != nil {
			r.req.Progress(0, len(r.expected))
		}
		first = false
		if r.pending == 0 && (len(r.queue) == 0 || r.stopped) {
			return nil
		}
		timer.Reset(r.nextWake())
		select {
		case <-ctx.Done():
			return ctx.Err()
		case b := <-r.in.ch:
			r.receive(b)
		case <-r.in.partial:
		case s := <-r.rc.status:
			r.rc.changed(s, time.Now())
		case p := <-r.rc.results:
			r.reconciled(p, time.Now())
		case <-timer.C:
		}
		now := time.Now()
		r.expire(now)
		r.in.parts.expire(now)
		r.noteIncomplete(now)
		if r.pending > 0 {
			r.rc.checkReconnects(now)
			r.rc.poll(ctx, now, r.lastDeadline())
		}
	}
}

// lastDeadline is the latest deadline of the asked hosts.
func (r *runner) lastDeadline() time.Time {
	if len(r.inflight) == 0 {
		return time.Now()
	}
	return r.inflight[len(r.inflight)-1].deadline
}

// reconciled takes the host records a read of history found.
func (r *runner) reconciled(p historyPoll, now time.Time) {
	for _, rec := range r.rc.read(p, now) {
		if rec.Identity == "" {
			continue // the request's own record
		}
		if rec.Err != nil {
			r.incomplete = append(r.incomplete, incompleteReply{identity: rec.Identity, reason: rec.Err.Error()})
			r.c.log.Warn("a history record did not arrive whole", "request", r.id, "identity", rec.Identity, "error", rec.Err)
			continue
		}
		m := verified(r.c.hostKeys, rec.Data, rec.Header)
		m.identity = rec.Identity
		r.take(m, SourceHistory)
	}
}

// nextWake is how long until the next deadline or slot refill.
func (r *runner) nextWake() time.Duration {
	var next time.Time
	for _, h := range r.inflight {
		if !h.finished() {
			next = h.deadline
			break
		}
	}
	if len(r.refills) > 0 && (next.IsZero() || r.refills[0].Before(next)) {
		next = r.refills[0]
	}
	if due := r.rc.due(); !due.IsZero() && r.pending > 0 && (next.IsZero() || due.Before(next)) {
		next = due
	}
	if r.in.parts.joiningCount() > 0 && (next.IsZero() || time.Until(next) > time.Second) {
		// a reply being joined may time out: check every second
		next = time.Now().Add(time.Second)
	}
	if next.IsZero() {
		return time.Hour
	}
	return max(time.Until(next), 0)
}

// dispatch asks as many hosts as the window allows.
func (r *runner) dispatch() error {
	if r.stopped || len(r.queue) == 0 || r.free == 0 {
		return nil
	}
	if !r.req.batching() {
		return r.sendWhole()
	}
	var sent []string
	defer func() { r.confirm(sent) }()
	for r.free > 0 && len(r.queue) > 0 && !r.stopped {
		h := r.queue[0]
		data, header, err := r.encode([]string{h})
		if err != nil {
			return err
		}
		if err := r.in.publish(r.c.nc, protocol.RequestNodeSubject(h), data, header); err != nil {
			return err
		}
		r.queue = r.queue[1:]
		r.free--
		r.asked(h, time.Now())
		sent = append(sent, h)
	}
	return nil
}

// confirmTimeout bounds the wait for the server to confirm it has the
// requests just sent.
const confirmTimeout = 5 * time.Second

// confirm flushes the connection so the server has the requests just sent
// to hosts. When it cannot confirm (the connection dropped before they
// were flushed, so a request may be lost with it) the hosts are noted,
// and reported in Result.Unconfirmed if they do not reply.
func (r *runner) confirm(hosts []string) {
	if len(hosts) == 0 {
		return
	}
	if err := r.c.nc.FlushTimeout(confirmTimeout); err != nil {
		r.unconfirmed = append(r.unconfirmed, hosts...)
		r.c.log.Warn("the server did not confirm receiving the request: the connection may have dropped before it was sent", "request", r.id, "hosts", len(hosts), "error", err)
	}
}

// unconfirmedNoReply lists the hosts whose request was not confirmed and
// that did not reply; nil when there are none.
func (r *runner) unconfirmedNoReply() []string {
	var out []string
	for _, id := range r.unconfirmed {
		if h := r.hosts[id]; h != nil && h.result == nil {
			out = append(out, id)
		}
	}
	return out
}

// sendWhole sends the request to every expected host at once.
func (r *runner) sendWhole() error {
	subjects, perNode := r.c.requestSubjects(r.req.Filter, r.expected)
	var targets []string
	if perNode || r.req.targeted() {
		targets = r.expected
	}
	data, header, err := r.encode(targets)
	if err != nil {
		return err
	}
	for _, s := range subjects {
		if err := r.in.publish(r.c.nc, s, data, header); err != nil {
			return err
		}
	}
	now := time.Now()
	for _, h := range r.queue {
		r.asked(h, now)
	}
	r.confirm(r.queue)
	r.queue = r.queue[:0]
	r.free = 0
	return nil
}

// encode builds the request for targets, bound to the inbox, and its
// signature headers when the client has a key.
func (r *runner) encode(targets []string) ([]byte, nats.Header, error) {
	fr := protocol.NewFleetRequest(r.id, r.c.now(), r.req.TTL)
	fr.Noop = r.req.Noop
	fr.Filter = r.req.Filter
	fr.Targets = targets
	fr.Ensure = r.req.Ensure
	fr.Manifest = r.manifest
	fr.Sender = r.c.publicKey
	fr.Reply = r.in.subject
	data, err := encodeRequest(fr, r.req.MaxRequestBytes)
	if err != nil {
		return nil, nil, err
	}
	header, err := r.c.signed(data)
	return data, header, err
}

// encodeRequest validates and encodes a fleet request no larger than max
// bytes, with protocol.EncodeJSON: json.Marshal would escape <, > and &
// again inside the ensure properties (a json.RawMessage is re-escaped).
func encodeRequest(fr *protocol.FleetRequest, max int) ([]byte, error) {
	if err := fr.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	data, err := protocol.EncodeJSON(fr)
	if err != nil {
		return nil, fmt.Errorf("encode request: %w", err)
	}
	if len(data) > max {
		return nil, fmt.Errorf("%w: the request is %d bytes, more than the %d bytes agents accept (their max_request_bytes)", ErrInvalid, len(data), max)
	}
	return data, nil
}

func (r *runner) asked(id string, now time.Time) {
	h := r.hosts[id]
	h.asked = true
	h.deadline = now.Add(r.req.Timeout)
	r.inflight = append(r.inflight, h)
	r.pending++
}

// receive handles one live reply.
func (r *runner) receive(m inboxMsg) { r.take(m, "") }

// take handles one reply, received live (source "") or read from the
// host's history record (SourceHistory), checked the same way: strict
// decoding, the request id, and a reply from an identity whose public key
// is known must be signed by that key, else it is counted spoofed and not
// trusted; with no key known it is taken and counted unverified. A host
// counts once: a history record of a host whose reply was taken, and a
// live reply of a host taken from history, are dropped without counting
// as duplicates (every host records its reply in history).
func (r *runner) take(m inboxMsg, source string) {
	reply, err := protocol.DecodeFleetReply(m.data, protocol.Limits{MaxBytes: protocol.MaxWholeBytes})
	switch {
	case err != nil:
		r.malformed++
		r.c.log.Warn("ignored a malformed reply", "request", r.id, "source", source, "error", err)
		return
	case reply.RequestID != r.id:
		r.malformed++
		r.c.log.Warn("ignored a reply to another request", "request", r.id, "identity", reply.Identity, "reply_to", reply.RequestID)
		return
	case source == SourceHistory && reply.Identity != m.identity:
		r.malformed++
		r.c.log.Warn("ignored a history record filed under another identity", "request", r.id, "identity", reply.Identity, "subject_identity", m.identity)
		return
	}
	fromHistory := source == SourceHistory
	key, known := r.keys[reply.Identity]
	if known && (!m.signed || m.signer != key) {
		r.spoofed++
		r.c.log.Warn("ignored a reply not signed by the key of the identity it claims", "request", r.id, "identity", reply.Identity, "signer", m.signer, "source", source)
		return
	}
	h, ok := r.hosts[reply.Identity]
	switch {
	case !ok || !h.asked:
		if r.seenUnexpected[reply.Identity] {
			if !fromHistory {
				r.duplicates++
			}
			return
		}
		if len(r.unexpected) >= MaxUnexpected {
			r.c.log.Warn("too many unexpected replies, not listing more", "request", r.id, "identity", reply.Identity)
			return
		}
		r.seenUnexpected[reply.Identity] = true
		r.unexpected = append(r.unexpected, reply.Identity)
		r.c.log.Warn("reply from a host that was not asked", "request", r.id, "identity", reply.Identity)
		return
	case h.result != nil:
		if !fromHistory && h.result.Source != SourceHistory {
			r.duplicates++
		}
		return
	case h.timedOut && fromHistory:
		return // a late reply is a live run's business, see LateHosts
	case h.timedOut && h.late:
		r.duplicates++
		return
	case h.timedOut:
		h.late = true
		r.lateHosts = append(r.lateHosts, reply.Identity)
		r.c.log.Warn("ignored a reply that came after its deadline", "request", r.id, "identity", reply.Identity)
		return
	}
	hr := newHostResult(r.req.Noop, reply)
	hr.Source = source
	h.result = &hr
	r.replied++
	if !known {
		r.unverified++
	}
	r.done(hr.Outcome == OutcomeFailed)
	// The host's result first, so a count of replies includes it.
	if r.req.OnReply != nil {
		r.req.OnReply(hr)
	}
	if r.req.Progress != nil {
		r.req.Progress(r.replied, len(r.expected))
	}
}

// expire times out the hosts whose deadline passed and returns the slots
// whose batch sleep is over.
func (r *runner) expire(now time.Time) {
	for len(r.inflight) > 0 {
		h := r.inflight[0]
		if !h.finished() {
			if h.deadline.After(now) {
				break
			}
			h.timedOut = true
			r.done(true)
		}
		r.inflight = r.inflight[1:]
	}
	for len(r.refills) > 0 && !r.refills[0].After(now) {
		r.refills = r.refills[1:]
		r.free++
	}
}

// done records that an asked host finished, counting failures (a failed
// host or one that did not reply) and freeing its window slot.
func (r *runner) done(failed bool) {
	r.pending--
	if failed {
		r.failures++
		if r.req.MaxFailures > 0 && r.failures >= r.req.MaxFailures && r.req.batching() {
			r.stopped = true
		}
	}
	if !r.req.batching() {
		return
	}
	if r.req.BatchSleep > 0 {
		r.refills = append(r.refills, time.Now().Add(r.req.BatchSleep))
		return
	}
	r.free++
}

// running lists the asked hosts that have neither replied nor passed
// their deadline, in expected order.
func (r *runner) running() []string {
	var out []string
	for _, id := range r.expected {
		if h := r.hosts[id]; h.asked && !h.finished() {
			out = append(out, id)
		}
	}
	return out
}

// results lists every asked host's result, sorted by identity.
func (r *runner) results() []HostResult {
	out := make([]HostResult, 0, len(r.expected))
	for _, id := range r.expected {
		h := r.hosts[id]
		switch {
		case !h.asked:
			continue
		case h.result != nil:
			out = append(out, *h.result)
		case r.interrupted && !h.timedOut:
			continue // still running, see running
		default:
			out = append(out, HostResult{Identity: id, Outcome: OutcomeNoReply, Events: []*protocol.TransactionEvent{}})
		}
	}
	return out
}
