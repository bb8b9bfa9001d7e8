package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/ccm-fleet/ccm/jsstore"
	"github.com/ccm-fleet/ccm/protocol"
)

// Host states of an assignment in a status report.
const (
	// StateConverged: the last run applied the current revision, nothing
	// failed (an audit: nothing would change).
	StateConverged = "converged"
	// StateDrift: the last run of a noop assignment found changes to make,
	// or a noop run made later (ccm-orch audit, ensure --noop) found some
	// of the resources the assignment's last run managed would change.
	StateDrift = "drift"
	// StateFailed: the last run failed (a resource failed, or the run
	// could not start, as for conflicting assignments).
	StateFailed = "failed"
	// StateRefused: the host's policy refuses the assignment (signer not
	// trusted, or a type it may not use).
	StateRefused = "refused"
	// StateQuarantined: the agent stopped (was killed, crashed) twice in
	// a row while applying the current revision, so it does not run it
	// again until a newer revision is assigned.
	StateQuarantined = "quarantined"
	// StatePending: the host's last run is of an older revision.
	StatePending = "pending"
	// StateStale: the host reported no run within twice the interval.
	StateStale = "stale"
)

// StatusOptions select what Status reports.
type StatusOptions struct {
	// Filter selects hosts by facts and identity (nil: every host).
	Filter *protocol.Filter
	// Assignment, when set, is the only assignment reported.
	Assignment string
	// Narrow, when set, keeps part of the hosts the filter selects (a
	// hosts list, a seeded sample of them), for every assignment alike.
	Narrow *Narrowing
}

// HostStatus is one host's state for one assignment: its last run, as
// recorded in history.
type HostStatus struct {
	Identity string `json:"identity"`
	State    string `json:"state"`
	// Revision is the revision the last run applied (0: none recorded).
	Revision  uint64    `json:"revision,omitempty"`
	Time      time.Time `json:"time,omitzero"`
	RequestID string    `json:"request_id,omitempty"`
	Trigger   string    `json:"trigger,omitempty"`
	// Changed, Drift and Failed count the last run's resources.
	Changed int `json:"changed"`
	Drift   int `json:"drift"`
	Failed  int `json:"failed"`
	// Health counts the last run's health checks by status (OK,
	// WARNING, CRITICAL, UNKNOWN).
	Health map[string]int `json:"health,omitempty"`
	// Flapping is the backoff of the last watch repair of a file that
	// keeps changing, "" when the last run was not one.
	Flapping string `json:"flapping,omitempty"`
	// WatchFailures counts the watch repairs that failed on the host
	// since its watch started; WatchError and WatchFailedAt are the
	// latest one's error and time. A failed repair does not end a watch.
	WatchFailures int       `json:"watch_failures,omitempty"`
	WatchError    string    `json:"watch_error,omitempty"`
	WatchFailedAt time.Time `json:"watch_failed_at,omitzero"`
	Message       string    `json:"message,omitempty"`
}

// AssignmentStatus is one assignment and every host it selects.
type AssignmentStatus struct {
	Name     string            `json:"name"`
	Revision uint64            `json:"revision"`
	Selector string            `json:"selector"`
	Interval protocol.Duration `json:"interval"`
	Noop     bool              `json:"noop"`
	Hosts    []HostStatus      `json:"hosts"`
	// Counts are the hosts per state.
	Counts map[string]int `json:"counts"`
}

// StatusReport is the fleet's state for its assignments.
type StatusReport struct {
	Time        time.Time          `json:"time"`
	Assignments []AssignmentStatus `json:"assignments"`
	// Sample says how the hosts were sampled (StatusOptions.Narrow), so
	// the report can be repeated with its seed; omitted when they were not.
	Sample *SampleReport `json:"sample,omitempty"`
	// ExitCode: 2 when a host failed, refuses or quarantined the
	// revision, 5 when one drifted, is
	// pending or stale, else 0.
	ExitCode protocol.ExitCode `json:"exit_code"`
}

// lastRun is the latest recorded run of one assignment on one host.
type lastRun struct {
	time     time.Time
	revision uint64
	id       string
	trigger  string
	flapping string
	watch    watchFailures
	reply    *protocol.FleetReply
}

// watchFailures is what a run's headers say of failed watch repairs.
type watchFailures struct {
	count int
	err   string
	at    time.Time
}

func watchFailuresOf(h interface{ Get(string) string }) watchFailures {
	n, err := strconv.Atoi(h.Get(protocol.HeaderWatchFailures))
	if err != nil || n <= 0 {
		return watchFailures{}
	}
	at, _ := time.Parse(time.RFC3339Nano, h.Get(protocol.HeaderWatchFailedAt))
	return watchFailures{count: n, err: h.Get(protocol.HeaderWatchError), at: at}
}

// Status reports, for each assignment and each live host in the node
// registry it selects (and the filter), the host's last recorded run. A
// host with no run within twice the interval is stale; so is one that ran
// it recently but is no longer in the registry.
func (c *Client) Status(ctx context.Context, opts StatusOptions) (*StatusReport, error) {
	now := c.now()
	entries, err := c.Assignments(ctx)
	if err != nil {
		return nil, err
	}
	if entries, err = selectAssignment(entries, opts.Assignment); err != nil {
		return nil, err
	}
	nodes, _, err := jsstore.ReadRegistry(ctx, c.js)
	if err != nil {
		return nil, err
	}
	live := map[string]map[string]any{}
	for _, n := range nodes {
		live[n.Identity] = n.Facts
	}
	// The last run of each assignment on each host within the window.
	runs := NewAssignmentRuns()
	err = jsstore.Read(ctx, c.js, jsstore.ReadOptions{Filter: protocol.HistorySubjects, Since: now.Add(-statusWindow(entries))}, func(r jsstore.Record) error {
		runs.Add(r)
		return nil
	})
	if err != nil && !errors.Is(err, jsstore.ErrNoHistory) {
		return nil, err
	}
	return StatusOf(entries, live, runs, now, opts)
}

// hostStatus classifies a host's last run of the assignment e.
func hostStatus(id string, e AssignmentEntry, run *lastRun, now time.Time) HostStatus {
	h := HostStatus{Identity: id}
	interval := time.Duration(e.Assignment.Interval)
	if run == nil {
		h.State, h.Message = StateStale, fmt.Sprintf("no run recorded in the last %s (twice the interval)", 2*interval)
		return h
	}
	h.Revision, h.Time, h.RequestID, h.Trigger, h.Flapping = run.revision, run.time, run.id, run.trigger, run.flapping
	h.WatchFailures, h.WatchError, h.WatchFailedAt = run.watch.count, run.watch.err, run.watch.at
	for _, ev := range run.reply.Events {
		for _, hc := range ev.HealthChecks {
			if h.Health == nil {
				h.Health = map[string]int{}
			}
			h.Health[hc.Status]++
		}
		switch {
		case ev.Failed:
			h.Failed++
			if h.Message == "" {
				h.Message = ev.ResourceID() + ": " + strings.Join(ev.Errors, "; ")
			}
		case ev.Changed && ev.Noop:
			h.Drift++
		case ev.Changed:
			h.Changed++
		}
	}
	switch {
	case run.reply.Error != nil && run.reply.Error.Code == protocol.CodeQuarantined && run.revision == e.Revision:
		h.State, h.Message = StateQuarantined, run.reply.Error.Message
	case run.reply.Error != nil && run.reply.Error.Code == protocol.CodeQuarantined:
		h.State, h.Message = StatePending, fmt.Sprintf("last ran revision %d, quarantined there: %s", run.revision, run.reply.Error.Message)
	case run.reply.Error != nil && (run.reply.Error.Code == protocol.CodeForbidden || run.reply.Error.Code == protocol.CodeUnauthenticated):
		h.State, h.Message = StateRefused, run.reply.Error.Message
	case run.reply.Error != nil:
		h.State, h.Message = StateFailed, run.reply.Error.Message
	case h.Failed > 0:
		h.State = StateFailed
	case now.Sub(run.time) > 2*interval:
		h.State, h.Message = StateStale, fmt.Sprintf("last run %s ago, more than twice the interval", now.Sub(run.time).Round(time.Second))
	case run.revision != e.Revision:
		h.State, h.Message = StatePending, fmt.Sprintf("last ran revision %d", run.revision)
	case h.Drift > 0:
		h.State = StateDrift
	default:
		h.State = StateConverged
	}
	return h
}

// noopRun reports whether reply is of a noop run that ran resources.
func noopRun(reply *protocol.FleetReply) bool {
	for _, ev := range reply.Events {
		if ev.Noop {
			return true
		}
	}
	return false
}

// laterAudit turns a converged host into drift when a noop run made after
// the assignment's last run found resources of that run that would
// change, so status, audit and the dashboard's drift page agree.
func laterAudit(h *HostStatus, run, audit *lastRun) {
	if h.State != StateConverged || run == nil || audit == nil || !audit.time.After(run.time) {
		return
	}
	managed := map[string]bool{}
	for _, ev := range run.reply.Events {
		managed[ev.ResourceID()] = true
	}
	n := 0
	for _, ev := range audit.reply.Events {
		if ev.Noop && ev.Changed && managed[ev.ResourceID()] {
			n++
		}
	}
	if n == 0 {
		return
	}
	h.State, h.Drift = StateDrift, n
	h.Message = fmt.Sprintf("a later audit (request %s at %s) found %d of its resources would change", audit.id, audit.time.UTC().Format(time.RFC3339), n)
}

// stateExit is a host state's exit code.
func stateExit(state string) protocol.ExitCode {
	switch state {
	case StateFailed, StateRefused, StateQuarantined:
		return protocol.ExitFailed
	case StateDrift, StateStale, StatePending:
		return protocol.ExitDrift
	}
	return protocol.ExitOK
}

// worse is the exit code that takes precedence (2 over 5 over 0).
func worse(a, b protocol.ExitCode) protocol.ExitCode {
	rank := func(c protocol.ExitCode) int {
		switch c {
		case protocol.ExitFailed:
			return 2
		case protocol.ExitDrift:
			return 1
		}
		return 0
	}
	if rank(b) > rank(a) {
		return b
	}
	return a
}

// selector renders an assignment's selector: its filter and targets, or
// "every host".
func selector(as *protocol.Assignment) string {
	parts := []string{}
	if f := FilterString(as.Filter); f != "" {
		parts = append(parts, f)
	}
	for _, t := range as.Targets {
		parts = append(parts, "host="+t)
	}
	if len(parts) == 0 {
		return "every host"
	}
	return strings.Join(parts, " ")
}

func withIdentity(facts map[string]any, id string) map[string]any {
	out := make(map[string]any, len(facts)+1)
	maps.Copy(out, facts)
	out["identity"] = id
	return out
}
