package orchestrator

import (
	"cmp"
	"slices"
	"sync"
	"time"

	"github.com/ccm-fleet/ccm/jsstore"
	"github.com/ccm-fleet/ccm/protocol"
)

// DefaultIndexRuns bounds the runs a HistoryIndex keeps.
const DefaultIndexRuns = 10000

// HistoryIndex keeps the runs of the history stream in memory as their
// records are read or arrive (Add), decoded and rebuilt exactly as
// Client.History does, so a reader that follows the stream (the dashboard)
// can list runs and hosts without reading JetStream again. It keeps the
// newest maxRuns runs by the time their first record was stored; a record
// of an older, dropped run is ignored. It is safe for concurrent use.
type HistoryIndex struct {
	mu      sync.Mutex
	maxRuns int
	runs    map[string]*indexRun
	// order holds the run ids by first record, oldest first.
	order []string
	// version counts the changes, so readers can tell something changed.
	version uint64
	// last is, per host, the run of its newest record.
	last map[string]string
	// asked is, per host, the newest run that expected it.
	asked map[string]string
}

// indexRun is one run's records so far.
type indexRun struct {
	request  *protocol.HistoryRequest
	recorded time.Time
	first    time.Time
	recs     map[string]*hostRecord
	heads    map[string]hostTiming
	// dups and malformed count records not taken.
	dups, malformed int
	// run is the rebuilt run, nil when records arrived since; sum is
	// its summary, made with it.
	run *HistoryRun
	sum HistorySummary
}

// NewHistoryIndex returns an empty index keeping at most maxRuns runs
// (DefaultIndexRuns when 0).
func NewHistoryIndex(maxRuns int) *HistoryIndex {
	if maxRuns <= 0 {
		maxRuns = DefaultIndexRuns
	}
	return &HistoryIndex{maxRuns: maxRuns, runs: map[string]*indexRun{}, last: map[string]string{}, asked: map[string]string{}}
}

// Add takes one history record and reports the run it belongs to, or ""
// when the record was not taken (malformed, a duplicate, or of a run
// already dropped).
func (x *HistoryIndex) Add(r jsstore.Record) string {
	x.mu.Lock()
	defer x.mu.Unlock()
	run := x.runs[r.RequestID]
	if run == nil {
		if len(x.order) >= x.maxRuns && r.Time.Before(x.runs[x.order[0]].first) {
			return ""
		}
		run = &indexRun{first: r.Time, recs: map[string]*hostRecord{}, heads: map[string]hostTiming{}}
		x.runs[r.RequestID] = run
		i, _ := slices.BinarySearchFunc(x.order, r.Time, func(id string, t time.Time) int { return x.runs[id].first.Compare(t) })
		x.order = slices.Insert(x.order, i, r.RequestID)
		for len(x.order) > x.maxRuns {
			dropped := x.order[0]
			for host := range x.runs[dropped].recs {
				if x.last[host] == dropped {
					delete(x.last, host)
				}
			}
			if req := x.runs[dropped].request; req != nil {
				for _, host := range req.Expected {
					if x.asked[host] == dropped {
						delete(x.asked, host)
					}
				}
			}
			delete(x.runs, dropped)
			x.order = x.order[1:]
		}
		if x.runs[r.RequestID] == nil {
			return ""
		}
	}
	if r.Identity == "" {
		if run.request != nil {
			run.dups++
			return ""
		}
		hr, err := protocol.DecodeHistoryRequest(r.Data, protocol.Limits{MaxBytes: maxRecordBytes})
		if err != nil || hr.RequestID != r.RequestID {
			run.malformed++
			return ""
		}
		run.request, run.recorded = hr, r.Time
		x.noteAskedLocked(r.RequestID, run)
	} else {
		reply, err := protocol.DecodeFleetReply(r.Data, protocol.Limits{MaxBytes: maxRecordBytes})
		switch {
		case err != nil || reply.RequestID != r.RequestID || reply.Identity != r.Identity:
			run.malformed++
			return ""
		case run.recs[r.Identity] != nil:
			run.dups++
			return ""
		}
		run.recs[r.Identity] = &hostRecord{reply: reply, time: r.Time}
		run.heads[r.Identity] = timingOf(r)
		if prev := x.runs[x.last[r.Identity]]; prev == nil || !r.Time.Before(prev.recs[r.Identity].time) {
			x.last[r.Identity] = r.RequestID
		}
		if run.request == nil {
			// A run an agent started on its own (an assignment)
			// carries its request in the host record's header.
			if hr := headerRequest(run.heads[r.Identity].request); hr != nil && hr.RequestID == r.RequestID {
				run.request, run.recorded = hr, r.Time
				x.noteAskedLocked(r.RequestID, run)
			}
		}
	}
	run.run = nil
	x.version++
	return r.RequestID
}

// Version changes whenever a record was taken.
func (x *HistoryIndex) Version() uint64 {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.version
}

// rebuilt returns run's HistoryRun, rebuilding it when records arrived
// since; nil while the run's own record has not been read. x.mu is held.
func (run *indexRun) rebuilt() *HistoryRun {
	if run.request == nil {
		return nil
	}
	if run.run == nil {
		timeout := time.Duration(run.request.Timeout)
		for host, h := range run.heads {
			run.recs[host].late = h.late(timeout)
		}
		res := rebuild(run.request, run.recorded, run.recs)
		res.Duplicates, res.Malformed = run.dups, run.malformed
		run.run = &HistoryRun{Request: run.request, Recorded: run.recorded, Result: res}
		run.sum = run.run.Summary()
	}
	return run.run
}

// Len is how many runs with their request record the index holds.
func (x *HistoryIndex) Len() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	n := 0
	for _, run := range x.runs {
		if run.request != nil {
			n++
		}
	}
	return n
}

// Runs returns up to limit runs, newest first, skipping the first offset,
// of those whose request record was read.
func (x *HistoryIndex) Runs(offset, limit int) []HistorySummary {
	x.mu.Lock()
	defer x.mu.Unlock()
	out := []HistorySummary{}
	skipped := 0
	for i := len(x.order) - 1; i >= 0 && len(out) < limit; i-- {
		run := x.runs[x.order[i]]
		if run.request == nil {
			continue
		}
		if skipped < offset {
			skipped++
			continue
		}
		out = append(out, run.rebuilt().Summary())
	}
	return out
}

// Run returns one run rebuilt, or nil when the index does not hold its
// request record.
func (x *HistoryIndex) Run(id string) *HistoryRun {
	x.mu.Lock()
	defer x.mu.Unlock()
	run := x.runs[id]
	if run == nil {
		return nil
	}
	return run.rebuilt()
}

// Host returns one host's results in the runs held, oldest first, at most
// limit (the most recent; 0: all).
func (x *HistoryIndex) Host(identity string, limit int) []HostEntry {
	x.mu.Lock()
	defer x.mu.Unlock()
	out := []HostEntry{}
	for _, id := range x.order {
		run := x.runs[id]
		rec := run.recs[identity]
		if rec == nil {
			continue
		}
		e := HostEntry{RequestID: id, Time: rec.time, Late: rec.late, Events: rec.reply.Events, Error: rec.reply.Error, Duration: rec.reply.Duration}
		e.setWatch(run.heads[identity].watch)
		noop := false
		if run.request != nil {
			e.Asked, noop = DescribeRequest(run.request), run.request.Noop
			e.Late = run.heads[identity].late(time.Duration(run.request.Timeout))
		}
		e.Noop = noop
		e.Outcome = hostOutcome(noop, rec.reply)
		if e.Events == nil {
			e.Events = []*protocol.TransactionEvent{}
		}
		out = append(out, e)
	}
	slices.SortStableFunc(out, func(a, b HostEntry) int { return cmp.Compare(a.Time.UnixNano(), b.Time.UnixNano()) })
	if limit > 0 && len(out) > limit {
		out = out[len(out)-limit:]
	}
	return out
}

// LastResult returns the run of host's newest record the index holds and
// the host's outcome in it; ok is false when there is none, or its run's
// request record has not been read yet.
func (x *HistoryIndex) LastResult(host string) (requestID, outcome string, ok bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	id := x.last[host]
	run := x.runs[id]
	if run == nil || run.request == nil {
		return "", "", false
	}
	return id, hostOutcome(run.request.Noop, run.recs[host].reply), true
}

// LastUnanswered returns the newest run that expected host when it is
// newer than the host's newest record and holds none from it: a run the
// host did not reply to (or not yet: the caller judges by the request's
// creation and timeout whether it still may); ok is false otherwise.
func (x *HistoryIndex) LastUnanswered(host string) (requestID string, req *protocol.HistoryRequest, ok bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	id := x.asked[host]
	run := x.runs[id]
	if run == nil || run.request == nil || run.recs[host] != nil {
		return "", nil, false
	}
	if last := x.runs[x.last[host]]; last != nil && !run.first.After(last.first) {
		return "", nil, false
	}
	return id, run.request, true
}

// noteAskedLocked keeps run id as the newest run that expected each of its
// hosts, unless a newer one did. x.mu is held.
func (x *HistoryIndex) noteAskedLocked(id string, run *indexRun) {
	for _, host := range run.request.Expected {
		if prev := x.runs[x.asked[host]]; prev == nil || !run.first.Before(prev.first) {
			x.asked[host] = id
		}
	}
}

// HostLastEvents returns the last event of each resource one host
// reported, by "type#name", and when it was reported.
func (x *HistoryIndex) HostLastEvents(host string) map[string]LastEvent {
	x.mu.Lock()
	defer x.mu.Unlock()
	out := map[string]LastEvent{}
	for _, id := range x.order {
		if rec := x.runs[id].recs[host]; rec != nil {
			addLastEvents(out, id, rec)
		}
	}
	return out
}

// addLastEvents keeps in m the events of rec that are newer than m's.
func addLastEvents(m map[string]LastEvent, id string, rec *hostRecord) {
	for _, ev := range rec.reply.Events {
		if ev == nil {
			continue
		}
		if prev, ok := m[ev.ResourceID()]; !ok || !rec.time.Before(prev.Time) {
			m[ev.ResourceID()] = LastEvent{RequestID: id, Time: rec.time, Event: ev}
		}
	}
}

// LastEvents returns, per host, the last event of each resource the host
// reported, by "type#name", and when it was reported.
func (x *HistoryIndex) LastEvents() map[string]map[string]LastEvent {
	x.mu.Lock()
	defer x.mu.Unlock()
	out := map[string]map[string]LastEvent{}
	for _, id := range x.order {
		for host, rec := range x.runs[id].recs {
			m := out[host]
			if m == nil {
				m = map[string]LastEvent{}
				out[host] = m
			}
			addLastEvents(m, id, rec)
		}
	}
	return out
}

// LastEvent is a resource's last event on one host.
type LastEvent struct {
	RequestID string
	Time      time.Time
	Event     *protocol.TransactionEvent
}

// Daily counts, per day (UTC) of the runs held, the host outcomes.
func (x *HistoryIndex) Daily() []DayCounts {
	x.mu.Lock()
	defer x.mu.Unlock()
	days := map[string]*DayCounts{}
	for _, id := range x.order {
		run := x.runs[id].rebuilt()
		if run == nil {
			continue
		}
		day := run.Recorded.UTC().Format(time.DateOnly)
		d := days[day]
		if d == nil {
			d = &DayCounts{Day: day}
			days[day] = d
		}
		h := run.Result.Summary.Hosts
		d.Changed += h.Changed
		d.Failed += h.Failed
		d.WouldChange += h.WouldChange
		d.NoReply += h.NoReply
		d.OK += h.OK
	}
	out := make([]DayCounts, 0, len(days))
	for _, d := range days {
		out = append(out, *d)
	}
	slices.SortFunc(out, func(a, b DayCounts) int { return cmp.Compare(a.Day, b.Day) })
	return out
}

// DayCounts are one day's host outcomes over the runs of that day.
type DayCounts struct {
	Day                                       string
	OK, Changed, Failed, WouldChange, NoReply int
}
