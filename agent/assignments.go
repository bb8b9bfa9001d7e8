package agent

import (
	"cmp"
	"context"
	"errors"
	"path/filepath"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ccm-fleet/ccm/jsstore"
	"github.com/ccm-fleet/ccm/protocol"
)

// AssignmentStateFileName is the file below the state directory where the
// agent keeps when it last ran each assignment, so a restart resumes the
// schedule rather than running everything again.
const AssignmentStateFileName = "assignments.json"

// assignmentRun answers a run the agent started on its own (scheduled, or
// a watch repair): into history only, its record marked with the
// assignment.
type assignmentRun struct {
	name     string
	revision uint64
	trigger  string
	// flapping is the backoff of a watch repair of a file that keeps
	// changing, "" otherwise
	flapping string
	// watchFailures, watchError and watchFailedAt are the assignment's
	// failed watch repairs (count, latest error and time); zero when none
	watchFailures int
	watchError    string
	watchFailedAt time.Time
	// request is the run's HistoryRequest, encoded
	request string
	// ran, when set, learns the run's reply before it is recorded
	ran func(*protocol.FleetReply)
}

var (
	_ responder = (*assignmentRun)(nil)
	_ settler   = (*assignmentRun)(nil)
)

// respond sends nothing: nobody waits on NATS for a run the agent
// started; history and the audit log have its answer.
func (r *assignmentRun) respond(*job, []byte, string) {}

// settle hands the reply to ran.
func (r *assignmentRun) settle(reply *protocol.FleetReply) {
	if r.ran != nil {
		r.ran(reply)
	}
}

// mark writes the run's assignment, revision and trigger in a history
// record's header.
func (r *assignmentRun) mark(h nats.Header) {
	h.Set(protocol.HeaderAssignment, r.name)
	h.Set(protocol.HeaderAssignmentRevision, strconv.FormatUint(r.revision, 10))
	h.Set(protocol.HeaderTrigger, r.trigger)
	if r.flapping != "" {
		h.Set(protocol.HeaderFlapping, r.flapping)
	}
	if r.watchFailures > 0 {
		h.Set(protocol.HeaderWatchFailures, strconv.Itoa(r.watchFailures))
		h.Set(protocol.HeaderWatchError, r.watchError)
		h.Set(protocol.HeaderWatchFailedAt, r.watchFailedAt.UTC().Format(time.RFC3339Nano))
	}
	if r.request != "" {
		h.Set(protocol.HeaderRequest, r.request)
	}
}

// assigned is one assignment as this agent knows it: admitted (signer and
// body set) or refused (refusal set).
type assigned struct {
	name      string
	revision  uint64
	spec      *protocol.Assignment
	signerKey string
	signer    *Signer
	body      *body
	refusal   *protocol.Error
	// selected is whether its selector picks this host; next is when it
	// runs next (zero: not scheduled) and why
	selected bool
	next     time.Time
	trigger  string
	// watch is its watched files, nil when none
	watch *watchState
	// audit holds the policy rule and value of a refusal
	audit AuditRecord
	// digest is the SHA-256 of the stored value; supersedes is whether
	// the revision passed the checks that let it replace what this agent
	// runs of the name (signature, order, ownership): a revision that did
	// not leaves the current one running
	digest     string
	supersedes bool
	// outOfScope is the refusal of the signer's hosts scope on this
	// host's facts as last judged (nil: in scope); it is judged again
	// when the facts change and before every run
	outOfScope *protocol.Error
}

// assigner follows the assignment store and runs the assignments that
// select this host. One goroutine (run) owns it: the KV watcher, the
// schedule and the runs, one at a time in name order.
type assigner struct {
	a     *Agent
	path  string
	state map[string]assignmentState
	known map[string]*assigned
	// refused is the revision whose refusal was recorded of each name
	// without a high-water mark (kept in memory only)
	refused map[string]uint64
	// owners are the owners the store's history gave names this agent
	// had no mark of (see historyOwner), until a revision is accepted
	owners map[string]string
	// kv is the assignment store once open (see store): a revision this
	// agent accepted is fetched from its history when the current value
	// is not one to run; following is set once the store is followed
	kv        jetstream.KeyValue
	following bool
	// facts are the facts the selection was last made with
	facts map[string]any
	// w watches the files of watch: true resources (nil until needed)
	w *watcher
	// q is the run journal: runs in flight, revisions the agent stopped
	// on, quarantined ones (see assign_quarantine.go)
	q *quarantine
}

func newAssigner(a *Agent) *assigner {
	state := a.setup.assignState
	if state == nil {
		state = map[string]assignmentState{}
	}
	s := &assigner{
		a:       a,
		path:    filepath.Join(a.cfg.StateDir, AssignmentStateFileName),
		state:   state,
		known:   map[string]*assigned{},
		refused: map[string]uint64{},
		facts:   a.facts.current().all,
	}
	s.q = a.exec.journal
	return s
}

// run follows the store until ctx is done; runs see jobs (cancelled when
// the shutdown timeout passes).
func (s *assigner) run(ctx, jobs context.Context) {
	a := s.a
	w := s.watch(ctx)
	if w == nil {
		return
	}
	defer func() { _ = w.Stop() }()
	defer func() { s.w.close() }()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	poll := time.NewTicker(watchPollInterval)
	defer poll.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case e, ok := <-w.Updates():
			if !ok {
				a.log.Warn("the assignment watcher stopped")
				return
			}
			if e != nil {
				s.factsFirst()
				s.update(e)
			}
		case <-a.facts.assign:
			s.reselect()
		case ev, ok := <-s.w.events():
			if !ok {
				s.watcherFailed(errors.New("event channel closed"), true)
				break
			}
			s.fileEvent(ev)
		case err, ok := <-s.w.errors():
			if !ok {
				err = errors.New("error channel closed")
			}
			s.watcherFailed(err, !ok)
		case <-s.w.pollC(poll):
			s.poll()
		case <-timer.C:
		}
		// Take every update already delivered before running, so a burst
		// of changes runs once.
		s.takeDelivered(w.Updates())
		s.runDue(jobs)
		timer.Reset(s.wait())
	}
}

// factsFirst takes a change of facts already signalled before a revision
// is judged: facts put in force before the revision arrived select (or no
// longer select) this host for it, whichever of the two select saw first.
func (s *assigner) factsFirst() {
	select {
	case <-s.a.facts.assign:
		s.reselect()
	default:
	}
}

// watch follows the store, trying again until it can (nil when ctx ends
// first): a store that does not exist yet (ccm-orch history init), a
// follow the server refuses (its consumer limit, JetStream away) must not
// leave the host without assignments. A bucket that republishes its
// changes is followed by the feed, which costs the broker no consumer; one
// provisioned before that, by a KV watcher.
//
// Every lookup is a JetStream API request; after a failed one the wait
// doubles from HistoryRetry up to followMaxWait. A store that does not
// exist is a fleet without assignments: asked every 10 s by 20,000 agents,
// 2,000 requests a second for nothing. A refused one is JetStream too busy:
// 50,000 agents starting at once, each asking again every 10 s, kept the
// servers' info queue full (it drops every request once full). While there
// is no store the agent also listens on the subjects it republishes its
// changes to (core NATS): the first assignment put wakes it, and it looks
// the store up within wakeSplay (spread, so a fleet does not ask at once).
func (s *assigner) watch(ctx context.Context) assignmentUpdates {
	a := s.a
	var wake *storeWake
	defer func() { wake.stop() }()
	wait := a.cfg.HistoryRetry
	for {
		w, err := s.follow(ctx)
		if err == nil {
			s.following = true
			return w
		}
		if ctx.Err() != nil {
			return nil
		}
		retry := wait
		wait = min(2*wait, max(followMaxWait, a.cfg.HistoryRetry))
		if errors.Is(err, jsstore.ErrNoAssignments) {
			if wake == nil {
				wake = newStoreWake(a.nc, a.log)
			}
			a.log.Debug("no assignment store yet (ccm-orch history init)", "error", err, "retry", retry)
		} else {
			a.log.Warn("cannot follow the assignment store; trying again", "error", err, "retry", retry)
		}
		if !wake.sleep(ctx, splayed(retry), min(a.cfg.HistoryRetry, wakeSplay)) {
			return nil
		}
	}
}

// follow looks the bucket up (one JetStream API request) and starts the
// feed when it republishes its changes for it, a KV watcher otherwise.
func (s *assigner) follow(ctx context.Context) (assignmentUpdates, error) {
	lctx, cancel := context.WithTimeout(ctx, s.a.cfg.HistoryTimeout)
	stream, err := s.a.setup.js.Stream(lctx, "KV_"+protocol.AssignmentsBucket)
	cancel()
	if err != nil {
		return nil, jsstore.AssignmentsError(err)
	}
	if feedEnabled(stream.CachedInfo()) {
		return startFeed(ctx, s.a.nc, s.a.log)
	}
	s.a.log.Info("the assignment store does not republish its changes (provisioned by an older release): following it with a watcher, one consumer on the broker; run ccm-orch history init to update it")
	kv, err := s.store(ctx)
	if err != nil {
		return nil, err
	}
	return kv.WatchAll(ctx)
}

// store opens the assignment store once; later calls return it.
func (s *assigner) store(ctx context.Context) (jetstream.KeyValue, error) {
	if s.kv != nil {
		return s.kv, nil
	}
	kv, err := jsstore.OpenAssignments(ctx, s.a.setup.js)
	if err != nil {
		return nil, err
	}
	s.kv = kv
	return kv, nil
}

// wait is how long until the next scheduled run (an hour at most).
func (s *assigner) wait() time.Duration {
	d := time.Hour
	now := s.a.now()
	for _, as := range s.known {
		if as.next.IsZero() {
			continue
		}
		d = min(d, max(as.next.Sub(now), 0))
	}
	return d
}

// update takes one change of the store. A delete or purge is not a
// removal: it is audited as refused and changes nothing (see
// ignoreDelete); a signed removal stops the assignment (see remove). A new
// revision is admitted (or refused, with an audit line and a history
// record) and scheduled when it selects this host; a revision refused
// before it could replace the current one (unsigned, untrusted, signed
// before the high-water mark, not by the owner) leaves the current one
// running.
func (s *assigner) update(e jetstream.KeyValueEntry) {
	if e.Operation() != jetstream.KeyValuePut {
		s.ignoreDelete(e.Key(), e.Revision(), e.Operation())
		return
	}
	s.take(e.Key(), e.Revision(), e.Value(), false)
}

// take is update for a stored value: a removal or a revision. restoring
// is set when value is the revision this agent last accepted, fetched
// again from the store's history (see restore).
func (s *assigner) take(name string, revision uint64, value []byte, restoring bool) {
	a := s.a
	limits := protocol.Limits{MaxBytes: jsstore.MaxAssignmentValueSize + 1}
	signed, err := protocol.DecodeSignedAssignment(value, limits)
	if err == nil && len(signed.Removal) > 0 {
		s.remove(name, revision, digestOf(value), signed)
		return
	}
	as := s.admit(name, revision, digestOf(value), signed, err)
	st := s.state[name]
	if !as.supersedes {
		s.keepCurrent(name, as, restoring)
		return
	}
	same := st.Digest == as.digest
	if old := s.known[name]; old != nil {
		// The new revision's first run decides what stays watched.
		as.watch = old.watch
	}
	s.known[name] = as
	if !same || st.Accepted != revision {
		if st.Owner == "" || st.Removed {
			st.Owner = cmp.Or(s.owners[name], as.signerKey)
		}
		delete(s.owners, name)
		st.Created, st.Accepted, st.Digest, st.Removed = as.spec.Created, revision, as.digest, false
		s.state[name] = st
		s.save()
	}
	if as.refusal != nil {
		s.unwatch(as)
		a.log.Warn("assignment refused", "assignment", name, "revision", as.revision, "code", as.refusal.Code, "error", as.refusal.Message)
		if as.spec.Selects(a.cfg.Identity, s.facts) {
			s.recordRefusalOnce(as)
		}
		return
	}
	as.selected = as.spec.Selects(a.cfg.Identity, s.facts)
	if !as.selected {
		s.unwatch(as)
		return
	}
	if !s.rejudge(as) {
		return
	}
	if (st.Revision == as.revision || same) && !st.LastRun.IsZero() {
		// Ran before (a restart, or the same revision stored again):
		// resume the schedule.
		as.next, as.trigger = s.after(as, st.LastRun), protocol.TriggerSchedule
		return
	}
	as.next, as.trigger = a.now(), protocol.TriggerChange
}

// keepCurrent records the refusal of a revision that may not replace what
// this agent runs of name: the revision accepted before stays (fetched
// again from the store's history when it is not known, unless restoring).
func (s *assigner) keepCurrent(name string, as *assigned, restoring bool) {
	a := s.a
	a.log.Warn("assignment revision refused, the one accepted before stays", "assignment", name, "revision", as.revision, "code", as.refusal.Code, "error", as.refusal.Message)
	if as.spec == nil || as.spec.Selects(a.cfg.Identity, s.facts) {
		s.recordRefusalOnce(as)
	}
	if cur := s.known[name]; cur == nil || !cur.supersedes {
		if !restoring && s.restore(name) {
			return
		}
		s.known[name] = as
	}
}
