package agent

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
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
func (r *assignmentRun) respond(string, []byte, string) {}

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
	// kv is the assignment store once open: a revision this agent
	// accepted is fetched from its history when the current value is not
	// one to run
	kv jetstream.KeyValue
	// facts are the facts the selection was last made with
	facts map[string]any
	// w watches the files of watch: true resources (nil until needed)
	w *watcher
}

func newAssigner(a *Agent) *assigner {
	state := a.setup.assignState
	if state == nil {
		state = map[string]assignmentState{}
	}
	return &assigner{
		a:       a,
		path:    filepath.Join(a.cfg.StateDir, AssignmentStateFileName),
		state:   state,
		known:   map[string]*assigned{},
		refused: map[string]uint64{},
		facts:   a.facts.current().all,
	}
}

// run follows the store until ctx is done; runs see jobs (cancelled when
// the shutdown timeout passes).
func (s *assigner) run(ctx, jobs context.Context) {
	a := s.a
	var kv jetstream.KeyValue
	for kv == nil {
		var err error
		kv, err = jsstore.OpenAssignments(ctx, a.setup.js)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, jsstore.ErrNoAssignments) {
			a.log.Debug("no assignment store yet (ccm-orch history init)", "error", err)
		} else {
			a.log.Warn("cannot open the assignment store", "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(a.cfg.HistoryRetry):
		}
	}
	s.kv = kv
	w, err := kv.WatchAll(ctx)
	if err != nil {
		a.log.Error("cannot watch the assignment store", "error", err)
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
		case <-poll.C:
			s.poll()
		case <-timer.C:
		}
		// Take every update already delivered before running, so a burst
		// of changes runs once.
		for drained := false; !drained; {
			select {
			case e, ok := <-w.Updates():
				if ok && e != nil {
					s.update(e)
				}
				drained = !ok
			default:
				drained = true
			}
		}
		s.runDue(jobs)
		timer.Reset(s.wait())
	}
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
			st.Owner = as.signerKey
		}
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

// admit checks a stored assignment the way a fleet request is checked:
// the signature and the signer's trust (authenticate), a strict decode,
// the sender equal to the signer; then that it may replace what this
// agent runs of the name (signed after the high-water mark, by the owner
// or an assignments administrator: supersedes); then the manifest parsed
// and the policy on every resource (authorize). signed and decodeErr are
// the stored form as decoded. The hosts scope is judged apart (rejudge),
// as it changes with the host's facts.
func (s *assigner) admit(name string, revision uint64, digest string, signed *protocol.SignedAssignment, decodeErr error) *assigned {
	a := s.a
	as := &assigned{name: name, revision: revision, digest: digest}
	limits := protocol.Limits{MaxBytes: jsstore.MaxAssignmentValueSize + 1}
	if decodeErr != nil {
		as.refusal = protocol.AsError(decodeErr)
		return as
	}
	as.signerKey = signed.Signer
	if signed.Signer == "" {
		as.refusal = protocol.NewError(protocol.CodeUnauthenticated, "assignment %s is not signed: assignments are run only when signed by a key the policy trusts", name)
		return as
	}
	signer, _, e := a.gate.auth.authenticate(signed.Assignment, signed.Signer, signed.Signature)
	as.signer = signer
	spec, err := protocol.DecodeAssignment(signed.Assignment, limits)
	if err == nil {
		as.spec = spec
	}
	switch {
	case e != nil:
		as.refusal = e
		return as
	case err != nil:
		as.refusal = protocol.AsError(err)
		return as
	case spec.Name != name:
		as.refusal = protocol.NewError(protocol.CodeBadRequest, "assignment stored as %q names itself %q", name, spec.Name)
		return as
	case spec.Sender != signed.Signer:
		as.refusal = protocol.NewError(protocol.CodeUnauthenticated, "field \"sender\" %.60q is not the signer %s", spec.Sender, signed.Signer)
		return as
	}
	if as.refusal = s.mayReplace(name, "revision", revision, digest, spec.Created, signed.Signer, signer, &as.audit); as.refusal != nil {
		return as
	}
	as.supersedes = true
	b, err := parseBody(&protocol.FleetRequest{Manifest: spec.Manifest}, a.gate.types)
	if err != nil {
		as.refusal = protocol.AsError(err)
		return as
	}
	as.body = b
	if as.refusal = admitSize(b); as.refusal != nil {
		return as
	}
	if signer != nil {
		id := runID(name, revision)
		as.refusal = a.gate.judge.resources(id, signer, b, spec.Noop, &as.audit)
	}
	return as
}

// after is when an assignment that ran at last runs next: an interval
// later plus this host's splay offset.
func (s *assigner) after(as *assigned, last time.Time) time.Time {
	return last.Add(time.Duration(as.spec.Interval) + s.offset(as))
}

// offset is this host's fixed share of the assignment's splay, the same
// after a restart.
func (s *assigner) offset(as *assigned) time.Duration {
	sp := time.Duration(as.spec.Splay)
	if sp <= 0 {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(s.a.cfg.Identity + "/" + as.name))
	return time.Duration(h.Sum64() % uint64(sp))
}

// reselect applies a change of facts: assignments that now select this
// host run at once, as do the selected ones (once more, with the new
// facts); ones that no longer select it stop.
func (s *assigner) reselect() {
	facts := s.a.facts.current().all
	if reflect.DeepEqual(facts, s.facts) {
		return
	}
	s.facts = facts
	now := s.a.now()
	for _, as := range s.known {
		if as.spec == nil {
			continue
		}
		was := as.selected
		as.selected = as.spec.Selects(s.a.cfg.Identity, facts)
		if !as.selected {
			// Judged again when it selects this host again.
			as.outOfScope = nil
		}
		switch {
		case as.refusal != nil:
			if as.selected && !was {
				s.recordRefusalOnce(as)
			}
		case as.selected:
			if s.rejudge(as) {
				as.next, as.trigger = now, protocol.TriggerFacts
			}
		case was:
			s.a.log.Info("assignment no longer selects this host", "assignment", as.name)
			as.next = time.Time{}
			s.unwatch(as)
		}
	}
}

// runDue runs every assignment whose time has come, one at a time in name
// order. An assignment declaring a resource (type#name) another selected
// assignment also declares does not run: both are answered with the
// conflict, neither applied in part.
func (s *assigner) runDue(ctx context.Context) {
	now := s.a.now()
	var due []*assigned
	for _, as := range s.known {
		if as.refusal == nil && as.selected && !as.next.IsZero() && !as.next.After(now) && s.rejudge(as) {
			due = append(due, as)
		}
	}
	if len(due) == 0 {
		return
	}
	slices.SortFunc(due, func(x, y *assigned) int { return strings.Compare(x.name, y.name) })
	conflicts := s.conflicts()
	for _, as := range due {
		if ctx.Err() != nil {
			return
		}
		started := s.a.now()
		// A run may ask for a watch repair of its own (a file changed
		// while it ran, a failed repair to try again): kept when due
		// before the schedule.
		as.next = time.Time{}
		if msg, ok := conflicts[as.name]; ok {
			s.a.log.Error("assignment not run: it declares a resource another assignment declares", "assignment", as.name, "error", msg)
			s.answer(as, started, protocol.NewError(protocol.CodeBadRequest, "%s", msg))
		} else {
			s.execute(ctx, as, started)
		}
		st := s.state[as.name]
		st.Revision, st.LastRun = as.revision, started
		s.state[as.name] = st
		s.save()
		if sched := s.after(as, started); as.next.IsZero() || as.trigger != protocol.TriggerWatch || !as.next.Before(sched) {
			as.next, as.trigger = sched, protocol.TriggerSchedule
		}
	}
}

// conflicts maps each selected, admitted assignment sharing a declared
// resource with another to the message naming them.
func (s *assigner) conflicts() map[string]string {
	owners := map[string][]string{}
	for _, as := range s.known {
		if as.refusal != nil || !as.selected || as.outOfScope != nil {
			continue
		}
		seen := map[string]bool{}
		for _, r := range as.body.resources {
			ref := r.Ref()
			if !seen[ref] {
				seen[ref] = true
				owners[ref] = append(owners[ref], as.name)
			}
		}
	}
	out := map[string]string{}
	refs := slices.Sorted(maps.Keys(owners))
	for _, ref := range refs {
		names := owners[ref]
		if len(names) < 2 {
			continue
		}
		slices.Sort(names)
		for _, n := range names {
			if _, ok := out[n]; !ok {
				out[n] = fmt.Sprintf("resource %s is declared by assignments %s: none of them is applied until one gives it up", ref, strings.Join(names, " and "))
			}
		}
	}
	return out
}

// newRun makes the job of one run of as: its own id, the assignment's
// noop and manifest, the signer as admitted, an audit line, answered into
// history only.
func (s *assigner) newRun(as *assigned, started time.Time) *job {
	a := s.a
	id := runID(as.name, as.revision)
	run := &assignmentRun{name: as.name, revision: as.revision, trigger: as.trigger}
	r := &job{
		received: started,
		deadline: started.Add(protocol.MaxFleetTTL),
		signer:   as.signer,
		body:     as.body,
		record:   true,
		respond:  run,
	}
	if as.spec != nil {
		r.noop = as.spec.Noop
	}
	r.audit = AuditRecord{Time: started.UTC(), RequestID: id, Subject: "$KV." + protocol.AssignmentsBucket + "." + as.name, Identity: a.cfg.Identity}
	r.audit.Signer.Key = as.signerKey
	r.audit.Rule, r.audit.Value = as.audit.Rule, as.audit.Value
	if as.signer != nil {
		r.audit.Signer.Name = as.signer.Name
	}
	if as.body != nil {
		r.audit.Resources = as.body.refs()
	}
	run.request = s.requestOf(as, id, started, r.noop)
	return r
}

// execute runs as once, as a fleet request that passed admission runs.
func (s *assigner) execute(ctx context.Context, as *assigned, started time.Time) {
	a := s.a
	r := s.newRun(as, started)
	run := r.respond.(*assignmentRun)
	run.ran = func(reply *protocol.FleetReply) {
		if as.trigger == protocol.TriggerWatch {
			run.flapping = s.repaired(as, started, reply)
		}
		if ws := as.watch; ws != nil && ws.failures > 0 {
			run.watchFailures, run.watchError, run.watchFailedAt = ws.failures, ws.lastError, ws.failedAt
		}
	}
	a.log.Info("running assignment", "assignment", as.name, "revision", as.revision, "trigger", as.trigger, "request", r.id())
	if reply := a.exec.run(ctx, r); reply != nil {
		s.rewatch(as, reply)
	}
}

// answer records a run of as that did not happen, refused with e.
func (s *assigner) answer(as *assigned, started time.Time, e *protocol.Error) {
	s.a.fin.refuse(s.newRun(as, started), e)
}

// recordRefusal answers a refused revision once: an audit line and a
// history record, so `ccm-orch status` shows the host refusing it.
func (s *assigner) recordRefusal(as *assigned) {
	as.trigger = protocol.TriggerChange
	s.answer(as, s.a.now(), as.refusal)
}

// recordRefusalOnce records as's refusal unless that of its revision was
// recorded already. Only names with a high-water mark keep this in the
// state file (so a restart does not record it again); others keep it in
// memory, so whoever can write the store cannot fill the file.
func (s *assigner) recordRefusalOnce(as *assigned) {
	st, marked := s.state[as.name]
	done := st.Refused
	if !marked {
		done = s.refused[as.name]
	}
	if done == as.revision {
		return
	}
	s.recordRefusal(as)
	if !marked {
		s.refused[as.name] = as.revision
		return
	}
	st.Refused = as.revision
	s.state[as.name] = st
	s.save()
}

// requestOf is the HistoryRequest of a run, as the header of its host
// record carries it, so history shows scheduled runs beside pushed ones
// (an agent may write only its own records, not a request record).
func (s *assigner) requestOf(as *assigned, id string, created time.Time, noop bool) string {
	hr := &protocol.HistoryRequest{
		Protocol:   protocol.HistoryRequestProtocol,
		RequestID:  id,
		Created:    created.UTC(),
		Noop:       noop,
		Discovery:  protocol.DiscoveryAssignment,
		Expected:   []string{s.a.cfg.Identity},
		TTL:        protocol.Duration(protocol.MaxFleetTTL),
		Assignment: as.name,
		Revision:   as.revision,
		Trigger:    as.trigger,
	}
	if as.spec != nil {
		hr.Filter = as.spec.Filter
		hr.Sender, hr.Manifest, hr.Timeout = as.spec.Author, as.spec.ManifestName, as.spec.Interval
	}
	data, err := json.Marshal(hr)
	if err != nil {
		return ""
	}
	return string(data)
}

// save writes the state file (atomically, synced); a failure is logged:
// the schedule goes on, a restart may run an assignment early, and a
// high-water mark not kept is said out loud.
func (s *assigner) save() {
	if err := saveAssignmentState(s.path, s.state); err != nil {
		s.a.log.Error("could not save the assignment state: a restart may run an assignment early, or miss a high-water mark", "file", s.path, "error", err)
	}
}

// runID is a new request id for a run of revision of name.
func runID(name string, revision uint64) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return fmt.Sprintf("%s_r%d_%s", name, revision, b[:])
}
