package ui

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ccm-fleet/ccm/jsstore"
	"github.com/ccm-fleet/ccm/orchestrator"
	"github.com/ccm-fleet/ccm/protocol"
)

// MaxAssignments bounds the assignments the dashboard keeps from the
// bucket.
const MaxAssignments = 10000

// followAssignments keeps the assignments in step with their bucket until
// ctx ends.
func (f *fleet) followAssignments(ctx context.Context, js jetstream.JetStream) {
	retry(ctx, func() error {
		err := f.watchAssignments(ctx, js)
		f.setErr(&f.assignErr, err)
		return err
	})
}

func (f *fleet) watchAssignments(ctx context.Context, js jetstream.JetStream) error {
	kv, err := jsstore.OpenAssignments(ctx, js)
	if err != nil {
		return err
	}
	return followKV(ctx, kv, "assignments", f.applyAssignment)
}

// applyAssignment takes one change of the assignments bucket: a bare
// delete or purge drops the name (as the CLI's listing does not show it);
// a stored revision, a signed removal included, replaces it.
func (f *fleet) applyAssignment(e jetstream.KeyValueEntry) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch e.Operation() {
	case jetstream.KeyValueDelete, jetstream.KeyValuePurge:
		delete(f.assignments, e.Key())
	default:
		if _, known := f.assignments[e.Key()]; !known && len(f.assignments) >= MaxAssignments {
			return
		}
		f.assignments[e.Key()] = orchestrator.ReadAssignmentEntry(e)
	}
	f.assignVersion++
	f.notify()
}

// factsOf returns a host's facts, nil when it is not in the registry.
func (f *fleet) factsOf(id string) map[string]any {
	if n := f.node(id); n != nil {
		return n.Facts
	}
	return nil
}

// assignmentEntries returns the assignments by name, and why they are not
// followed ("" when they are).
func (f *fleet) assignmentEntries() ([]orchestrator.AssignmentEntry, string) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	out := make([]orchestrator.AssignmentEntry, 0, len(f.assignments))
	for _, k := range slices.Sorted(maps.Keys(f.assignments)) {
		out = append(out, f.assignments[k])
	}
	return out, f.assignErr
}

// live returns the hosts of the registry with their flat facts, as the
// CLI's status reads them: an entry not refreshed within the bucket's TTL
// has expired from the bucket, though the watch does not say so.
func (f *fleet) live(now time.Time) map[string]map[string]any {
	f.mu.RLock()
	defer f.mu.RUnlock()
	ttl := f.ttl
	if ttl <= 0 {
		ttl = 90 * time.Second
	}
	out := make(map[string]map[string]any, len(f.nodes))
	for id, n := range f.nodes {
		if now.Sub(n.LastSeen) <= ttl {
			out[id] = n.Facts
		}
	}
	return out
}

// status reports the assignments as `ccm-orch status` does, over what
// the dashboard holds; an assignment named that is not held is
// orchestrator.ErrNoAssignment.
func (s *Server) status(opts orchestrator.StatusOptions) (*orchestrator.StatusReport, error) {
	now := s.opts.Now()
	entries, _ := s.fleet.assignmentEntries()
	return orchestrator.StatusOf(entries, s.fleet.live(now), s.fleet.runs, now, opts)
}

// statusStates are the states of a host for an assignment, worst first,
// as ccm-orch status shows them.
var statusStates = []string{orchestrator.StateFailed, orchestrator.StateQuarantined, orchestrator.StateRefused, orchestrator.StateStale,
	orchestrator.StateDrift, orchestrator.StatePending, orchestrator.StateConverged}

// stateHosts are the hosts of an assignment in one state with one
// message, each host's own name and fact values folded into <host> and
// <facts.KEY> as in reports.
type stateHosts struct {
	State   string
	Message string
	Hosts   []string
}

// assignmentRow is an assignment on the assignments page.
type assignmentRow struct {
	orchestrator.AssignmentStatus
	// Cells count the hosts per state, in statusStates' order.
	Cells []int
	// Groups are its hosts by state and message, worst first.
	Groups []stateHosts
}

type assignmentsView struct {
	layout
	States  []string
	State   string
	Problem string
	Rows    []assignmentRow
	// One is set on one assignment's page, with its runs.
	One  bool
	Runs runsData
}

// rowOf lays out one assignment's status; facts gives a host's facts
// (nil when it is not in the registry).
func rowOf(as orchestrator.AssignmentStatus, facts func(string) map[string]any) assignmentRow {
	row := assignmentRow{AssignmentStatus: as}
	for _, st := range statusStates {
		row.Cells = append(row.Cells, as.Counts[st])
		byMsg := map[string]*stateHosts{}
		var order []string
		for _, h := range as.Hosts {
			if h.State != st {
				continue
			}
			msg := orchestrator.ShapeOf(h.Message, h.Identity, facts(h.Identity))
			g := byMsg[msg]
			if g == nil {
				g = &stateHosts{State: st, Message: msg}
				byMsg[msg] = g
				order = append(order, msg)
			}
			g.Hosts = append(g.Hosts, h.Identity)
		}
		for _, m := range order {
			row.Groups = append(row.Groups, *byMsg[m])
		}
	}
	return row
}

// assignmentsData is the assignments page: the status report, with only
// the assignments that have a host in state when one is asked for.
func (s *Server) assignmentsData(r *http.Request) (*orchestrator.StatusReport, string, error) {
	state := choice(r, "state", "", statusStates)
	rep, err := s.status(orchestrator.StatusOptions{})
	if err != nil {
		return nil, state, err
	}
	if state != "" {
		rep.Assignments = slices.DeleteFunc(rep.Assignments, func(as orchestrator.AssignmentStatus) bool { return as.Counts[state] == 0 })
	}
	if rep.Assignments == nil {
		rep.Assignments = []orchestrator.AssignmentStatus{}
	}
	return rep, state, nil
}

func (s *Server) assignmentsPage(w http.ResponseWriter, r *http.Request) {
	rep, state, err := s.assignmentsData(r)
	if err != nil {
		s.writePageError(w, &pageError{http.StatusInternalServerError, err.Error()})
		return
	}
	v := assignmentsView{layout: s.layout("Assignments", "assignments"), States: statusStates, State: state}
	_, v.Problem = s.fleet.assignmentEntries()
	for _, as := range rep.Assignments {
		v.Rows = append(v.Rows, rowOf(as, s.fleet.factsOf))
	}
	s.render(w, "assignments", v)
}

// assignmentData is one assignment's status; an assignment the dashboard
// does not hold, or a removed one, is a 404.
func (s *Server) assignmentData(name string) (*orchestrator.StatusReport, *pageError) {
	if err := protocol.ValidateAssignmentName(name); err != nil {
		return nil, &pageError{http.StatusBadRequest, protocol.AsError(err).Message}
	}
	rep, err := s.status(orchestrator.StatusOptions{Assignment: name})
	switch {
	case errors.Is(err, orchestrator.ErrNoAssignment):
		return nil, &pageError{http.StatusNotFound, err.Error()}
	case err != nil:
		return nil, &pageError{http.StatusInternalServerError, err.Error()}
	}
	return rep, nil
}

func (s *Server) assignmentPage(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	rep, perr := s.assignmentData(name)
	if perr != nil {
		s.writePageError(w, perr)
		return
	}
	v := assignmentsView{layout: s.layout("Assignment "+name, "assignments"), States: statusStates, One: true}
	for _, as := range rep.Assignments {
		v.Rows = append(v.Rows, rowOf(as, s.fleet.factsOf))
	}
	q := r.URL.Query()
	q.Set("assignment", name)
	rr := r.Clone(r.Context())
	rr.URL.RawQuery = q.Encode()
	v.Runs = s.runsData(rr)
	s.render(w, "assignment", v)
}
