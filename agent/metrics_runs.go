package agent

import (
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ccm-fleet/ccm/protocol"
)

// Outcomes of an assignment's run, as ccm_agent_assignment_last_run
// labels them.
const (
	// outcomeStable: the run ended with nothing to change and nothing failed
	// (the assignment is converged).
	outcomeStable = "stable"
	// outcomeChanged: the run changed (or refreshed) something, nothing failed.
	outcomeChanged = "changed"
	// outcomeWouldChange: a noop run found something to change, nothing failed.
	outcomeWouldChange = "would_change"
	// outcomeFailed: a resource (or its health check) failed.
	outcomeFailed = "failed"
	// outcomeError: the run did not happen or could not start (refused,
	// quarantined, invalid, expired...).
	outcomeError = "error"
)

// runOutcomeNames are every outcome, in the order the metric lists them.
var runOutcomeNames = []string{outcomeStable, outcomeChanged, outcomeWouldChange, outcomeFailed, outcomeError}

// healthValues are the values of ccm_agent_health_check_status: the
// Nagios exit codes of the statuses.
var healthValues = map[string]float64{protocol.HealthOK: 0, protocol.HealthWarning: 1, protocol.HealthCritical: 2, protocol.HealthUnknown: 3}

// runGauges are the gauges read from the agent's runs: each assignment's
// last run (outcome, time, when it last converged) and each health check's
// last status. A collector of its own, as the convergence age is read at
// scrape time.
type runGauges struct {
	now func() time.Time

	lastRun, outcome, converged, age, health *prometheus.Desc

	// guards assignments and checks
	mu          sync.Mutex
	assignments map[string]*assignmentGauge
	checks      map[healthKey]float64
}

// assignmentGauge is what the gauges say of one assignment.
type assignmentGauge struct {
	// outcome and at are the last run's (runOutcomeNames)
	outcome string
	at      time.Time
	// converged is when a run last ended stable, zero when none has
	converged time.Time
}

// healthKey is one health check of one resource (type#name).
type healthKey struct{ resource, check string }

func newRunGauges(now func() time.Time) *runGauges {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName("ccm", "agent", name), help, labels, nil)
	}
	return &runGauges{
		now:         now,
		lastRun:     d("assignment_last_run_timestamp_seconds", "When the assignment's last run ended (Unix seconds).", "assignment"),
		outcome:     d("assignment_last_run", "1 for the outcome of the assignment's last run (stable, changed, would_change, failed, error), 0 for the others.", "assignment", "outcome"),
		converged:   d("assignment_converged_timestamp_seconds", "When a run of the assignment last ended with nothing to change and nothing failed (Unix seconds); absent until one has.", "assignment"),
		age:         d("assignment_convergence_age_seconds", "Seconds since a run of the assignment last ended with nothing to change and nothing failed; absent until one has.", "assignment"),
		health:      d("health_check_status", "The last status of a resource's health check: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN.", "resource", "check"),
		assignments: map[string]*assignmentGauge{},
		checks:      map[healthKey]float64{},
	}
}

// Describe implements prometheus.Collector.
func (g *runGauges) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{g.lastRun, g.outcome, g.converged, g.age, g.health} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (g *runGauges) Collect(ch chan<- prometheus.Metric) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	for name, a := range g.assignments {
		ch <- prometheus.MustNewConstMetric(g.lastRun, prometheus.GaugeValue, unixSeconds(a.at), name)
		for _, o := range runOutcomeNames {
			v := 0.0
			if o == a.outcome {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(g.outcome, prometheus.GaugeValue, v, name, o)
		}
		if !a.converged.IsZero() {
			ch <- prometheus.MustNewConstMetric(g.converged, prometheus.GaugeValue, unixSeconds(a.converged), name)
			ch <- prometheus.MustNewConstMetric(g.age, prometheus.GaugeValue, max(now.Sub(a.converged).Seconds(), 0), name)
		}
	}
	for k, v := range g.checks {
		ch <- prometheus.MustNewConstMetric(g.health, prometheus.GaugeValue, v, k.resource, k.check)
	}
}

func unixSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

// ran records the end, at, of a run of assignment name with reply.
func (g *runGauges) ran(name string, reply *protocol.FleetReply, at time.Time) {
	outcome := runOutcome(reply)
	g.mu.Lock()
	defer g.mu.Unlock()
	a := g.assignments[name]
	if a == nil {
		a = &assignmentGauge{}
		g.assignments[name] = a
	}
	a.outcome, a.at = outcome, at
	if outcome == outcomeStable {
		a.converged = at
	}
}

// forget removes assignment name's gauges (it was removed).
func (g *runGauges) forget(name string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.assignments, name)
}

// checked records the health checks' statuses of events.
func (g *runGauges) checked(events []*protocol.TransactionEvent) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, ev := range events {
		for _, hc := range ev.HealthChecks {
			if v, ok := healthValues[hc.Status]; ok {
				g.checks[healthKey{ev.Type + "#" + ev.Name, hc.Name}] = v
			}
		}
	}
}

// runOutcome is the outcome of a run answered with reply (nil: it did
// not run).
func runOutcome(reply *protocol.FleetReply) string {
	if reply == nil || reply.Error != nil {
		return outcomeError
	}
	outcomes := make([]string, 0, len(reply.Events))
	for _, ev := range reply.Events {
		outcomes = append(outcomes, ev.Outcome())
	}
	switch {
	case slices.Contains(outcomes, protocol.EventFailed):
		return outcomeFailed
	case slices.Contains(outcomes, protocol.EventChanged), slices.Contains(outcomes, protocol.EventRefreshed):
		return outcomeChanged
	case slices.Contains(outcomes, protocol.EventWouldChange):
		return outcomeWouldChange
	}
	return outcomeStable
}

// assignmentRan records the end of a run of assignment name.
func (m *Metrics) assignmentRan(name string, reply *protocol.FleetReply, at time.Time) {
	if m != nil {
		m.runs.ran(name, reply, at)
	}
}

// checked records the health checks' statuses of events, of a run that
// is not a job (a manifest source's health-check-only run).
func (m *Metrics) checked(events []*protocol.TransactionEvent) {
	if m != nil {
		m.runs.checked(events)
	}
}

// assignmentRemoved forgets assignment name's gauges.
func (m *Metrics) assignmentRemoved(name string) {
	if m != nil {
		m.runs.forget(name)
	}
}
