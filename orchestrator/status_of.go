package orchestrator

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ccm-fleet/ccm/jsstore"
	"github.com/ccm-fleet/ccm/protocol"
)

// MaxAssignmentRuns bounds the (assignment, host) pairs an AssignmentRuns
// keeps; beyond it, a pair not yet held is not taken.
const MaxAssignmentRuns = 1_000_000

// AssignmentRuns keeps the latest recorded run of each assignment on each
// host, as history records are read or arrive (Add), reduced to what a
// status report judges. Client.Status fills one from a read of the
// history; a reader that follows the stream (the dashboard) keeps one up
// to date and reports with StatusOf, so both classify hosts with the same
// code. It is safe for concurrent use.
type AssignmentRuns struct {
	mu   sync.Mutex
	last map[string]map[string]*lastRun
	// audits holds each host's latest noop run of no assignment (an
	// operator's audit), which may have found drift since a run.
	audits map[string]*lastRun
	n      int
	// version counts the runs taken.
	version uint64
}

// NewAssignmentRuns returns an empty AssignmentRuns.
func NewAssignmentRuns() *AssignmentRuns {
	return &AssignmentRuns{last: map[string]map[string]*lastRun{}, audits: map[string]*lastRun{}}
}

// Add takes one history record and reports whether it was the newest run
// of an assignment on its host, or the newest audit (a pushed noop run)
// of its host. Other records of pushed requests, request records and
// replies that do not decode are not taken; a run whose record could not
// be joined is taken as a failed run that says so.
func (a *AssignmentRuns) Add(r jsstore.Record) bool {
	name := r.Header.Get(protocol.HeaderAssignment)
	if r.Identity == "" {
		return false
	}
	if name == "" {
		return a.addAudit(r)
	}
	reply, err := protocol.DecodeFleetReply(r.Data, protocol.Limits{MaxBytes: maxRecordBytes})
	switch {
	case r.Err != nil:
		// A run whose record cannot be joined is said, not dropped.
		reply = protocol.NewFleetReply(r.RequestID, r.Identity, r.Time)
		reply.Error = protocol.NewError(protocol.CodeInternal, "the history record of this run is incomplete: %s", r.Err)
	case err != nil:
		return false
	}
	rev, _ := strconv.ParseUint(r.Header.Get(protocol.HeaderAssignmentRevision), 10, 64)
	run := &lastRun{time: r.Time, revision: rev, id: r.RequestID, trigger: r.Header.Get(protocol.HeaderTrigger),
		flapping: r.Header.Get(protocol.HeaderFlapping), watch: watchFailuresOf(r.Header), reply: judged(reply)}
	a.mu.Lock()
	defer a.mu.Unlock()
	byHost := a.last[name]
	prev := byHost[r.Identity]
	switch {
	case prev != nil && r.Time.Before(prev.time):
		return false
	case prev == nil && a.n >= MaxAssignmentRuns:
		return false
	case prev == nil:
		a.n++
	}
	if byHost == nil {
		byHost = map[string]*lastRun{}
		a.last[name] = byHost
	}
	byHost[r.Identity] = run
	a.version++
	return true
}

// addAudit takes a pushed request's reply when it is the host's newest
// noop run.
func (a *AssignmentRuns) addAudit(r jsstore.Record) bool {
	if r.Err != nil {
		return false
	}
	reply, err := protocol.DecodeFleetReply(r.Data, protocol.Limits{MaxBytes: maxRecordBytes})
	if err != nil || !noopRun(reply) {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	prev := a.audits[r.Identity]
	switch {
	case prev != nil && r.Time.Before(prev.time):
		return false
	case prev == nil && a.n >= MaxAssignmentRuns:
		return false
	case prev == nil:
		a.n++
	}
	a.audits[r.Identity] = &lastRun{time: r.Time, id: r.RequestID, reply: judged(reply)}
	a.version++
	return true
}

// audit returns host's newest audit recorded at or after from, or nil.
func (a *AssignmentRuns) audit(host string, from time.Time) *lastRun {
	a.mu.Lock()
	defer a.mu.Unlock()
	if run := a.audits[host]; run != nil && !run.time.Before(from) {
		return run
	}
	return nil
}

// Version changes whenever a run was taken.
func (a *AssignmentRuns) Version() uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.version
}

// judged keeps of a reply only what hostStatus reads: its error, and per
// event the resource, whether it failed or changed under noop, its errors
// and its health checks.
func judged(reply *protocol.FleetReply) *protocol.FleetReply {
	out := &protocol.FleetReply{RequestID: reply.RequestID, Identity: reply.Identity, Error: reply.Error}
	for _, ev := range reply.Events {
		if ev == nil {
			continue
		}
		out.Events = append(out.Events, &protocol.TransactionEvent{Type: ev.Type, Name: ev.Name, Failed: ev.Failed,
			Changed: ev.Changed, Noop: ev.Noop, Errors: ev.Errors, HealthChecks: ev.HealthChecks})
	}
	return out
}

// since returns the runs of name recorded at or after from, by host.
func (a *AssignmentRuns) since(name string, from time.Time) map[string]*lastRun {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := map[string]*lastRun{}
	for host, run := range a.last[name] {
		if !run.time.Before(from) {
			out[host] = run
		}
	}
	return out
}

// statusWindow is how far back a status report looks for runs: twice the
// longest interval of the assignments, and a minute.
func statusWindow(entries []AssignmentEntry) time.Duration {
	var window time.Duration
	for _, e := range entries {
		if e.Assignment != nil {
			window = max(window, 2*time.Duration(e.Assignment.Interval))
		}
	}
	return window + time.Minute
}

// StatusOf reports, as Client.Status does, the state of every host each
// assignment of entries selects: live holds the node registry's hosts and
// their flat facts, runs the recorded runs, now the time judged at. A
// host with no run within twice the interval is stale; so is one that ran
// it recently but is no longer in live. opts.Assignment naming no entry,
// or a removed one, is ErrNoAssignment.
func StatusOf(entries []AssignmentEntry, live map[string]map[string]any, runs *AssignmentRuns, now time.Time, opts StatusOptions) (*StatusReport, error) {
	entries, err := selectAssignment(entries, opts.Assignment)
	if err != nil {
		return nil, err
	}
	if err := opts.Narrow.Validate(); err != nil {
		return nil, err
	}
	from := now.Add(-statusWindow(entries))
	rep := &StatusReport{Time: now}
	allowed, sample := narrowStatus(entries, live, runs, from, opts)
	rep.Sample = sample
	for _, e := range entries {
		if e.Assignment == nil {
			continue
		}
		as := e.Assignment
		last := runs.since(e.Name, from)
		st := AssignmentStatus{Name: e.Name, Revision: e.Revision, Selector: selector(as), Interval: as.Interval, Noop: as.Noop, Counts: map[string]int{}}
		hosts := map[string]bool{}
		for id, facts := range live {
			if f := withIdentity(facts, id); as.Selects(id, f) && (opts.Filter == nil || opts.Filter.Match(f)) {
				hosts[id] = true
			}
		}
		for id := range last {
			if _, ok := live[id]; !ok && opts.Filter == nil {
				hosts[id] = true
			}
		}
		for _, id := range slices.Sorted(maps.Keys(hosts)) {
			if allowed != nil && !allowed[id] {
				continue
			}
			h := hostStatus(id, e, last[id], now)
			laterAudit(&h, last[id], runs.audit(id, from))
			if _, ok := live[id]; !ok {
				h.State, h.Message = StateStale, "no longer in the node registry (agent stopped?)"
			}
			st.Hosts = append(st.Hosts, h)
			st.Counts[h.State]++
			rep.ExitCode = worse(rep.ExitCode, stateExit(h.State))
		}
		rep.Assignments = append(rep.Assignments, st)
	}
	return rep, nil
}

// narrowStatus applies opts.Narrow once to every host a status report
// could name (the live hosts the filter selects and, without a filter, the
// hosts with runs no longer live), so that a sample is the same for every
// assignment; nil when opts does not narrow.
func narrowStatus(entries []AssignmentEntry, live map[string]map[string]any, runs *AssignmentRuns, from time.Time, opts StatusOptions) (map[string]bool, *SampleReport) {
	if !opts.Narrow.active() {
		return nil, nil
	}
	var all []string
	for id, facts := range live {
		if opts.Filter == nil || opts.Filter.Match(withIdentity(facts, id)) {
			all = append(all, id)
		}
	}
	if opts.Filter == nil {
		for _, e := range entries {
			for id := range runs.since(e.Name, from) {
				if _, ok := live[id]; !ok {
					all = append(all, id)
				}
			}
		}
	}
	kept, sample := opts.Narrow.Apply(all)
	allowed := make(map[string]bool, len(kept))
	for _, id := range kept {
		allowed[id] = true
	}
	return allowed, sample
}

// selectAssignment keeps of entries the one named name ("": all of them);
// none, or a removed one, is ErrNoAssignment.
func selectAssignment(entries []AssignmentEntry, name string) ([]AssignmentEntry, error) {
	if name == "" {
		return entries, nil
	}
	entries = slices.DeleteFunc(slices.Clone(entries), func(e AssignmentEntry) bool { return e.Name != name })
	if len(entries) == 0 {
		return nil, fmt.Errorf("%w %q", ErrNoAssignment, name)
	}
	if r := entries[0].Removed; r != nil {
		return nil, fmt.Errorf("%w %q: removed at %s by %s", ErrNoAssignment, name, r.Created.Format(time.RFC3339), r.Sender)
	}
	return entries, nil
}

// ReadAssignmentEntry decodes one stored revision of the assignments
// bucket as Client.Assignments does; what does not decode is named in
// Problem.
func ReadAssignmentEntry(e jetstream.KeyValueEntry) AssignmentEntry { return readEntry(e) }
