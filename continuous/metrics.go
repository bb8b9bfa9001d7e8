package continuous

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ccm-fleet/ccm/manifest"
	"github.com/ccm-fleet/ccm/protocol"
)

// Metrics are the agent's Prometheus collectors, named as CCM names them
// (choria_ccm_*), so dashboards made for CCM work unchanged.
type Metrics struct {
	applyDuration       *prometheus.SummaryVec
	healthDuration      *prometheus.SummaryVec
	remediations        *prometheus.CounterVec
	dataDuration        prometheus.Summary
	dataErrors          *prometheus.CounterVec
	factsDuration       prometheus.Summary
	factsErrors         prometheus.Counter
	fetches             *prometheus.CounterVec
	fetchErrors         *prometheus.CounterVec
	manifestDuration    *prometheus.SummaryVec
	resourceDuration    *prometheus.SummaryVec
	stateTotal          *prometheus.CounterVec
	stateStable         *prometheus.CounterVec
	stateChanged        *prometheus.CounterVec
	stateRefreshed      *prometheus.CounterVec
	stateFailed         *prometheus.CounterVec
	stateError          *prometheus.CounterVec
	stateSkipped        *prometheus.CounterVec
	stateNoop           *prometheus.CounterVec
	checkDuration       *prometheus.SummaryVec
	checkStatus         *prometheus.CounterVec
	factsGatherDuration prometheus.Summary
	refusedBundles      *prometheus.CounterVec
}

// NewMetrics makes the collectors and registers them with reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	name := func(n string) string { return prometheus.BuildFQName("choria", "ccm", n) }
	sum := func(n, help string, labels ...string) *prometheus.SummaryVec {
		return prometheus.NewSummaryVec(prometheus.SummaryOpts{Name: name(n), Help: help}, labels)
	}
	cnt := func(n, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name(n), Help: help}, labels)
	}
	m := &Metrics{
		applyDuration:       sum("agent_apply_duration_seconds", "Time taken to apply manifests", "manifest"),
		healthDuration:      sum("agent_healthcheck_duration_seconds", "Time taken for health check runs", "manifests"),
		remediations:        cnt("agent_healthcheck_remediations_count", "Health checks that triggered remediation", "manifest"),
		dataDuration:        prometheus.NewSummary(prometheus.SummaryOpts{Name: name("agent_data_resolve_duration_seconds"), Help: "Time taken to resolve external data"}),
		dataErrors:          cnt("agent_data_resolve_error_count", "Data resolution failures", "url"),
		factsDuration:       prometheus.NewSummary(prometheus.SummaryOpts{Name: name("agent_facts_resolve_duration_seconds"), Help: "Time taken to resolve facts"}),
		factsErrors:         prometheus.NewCounter(prometheus.CounterOpts{Name: name("agent_facts_resolve_error_count"), Help: "Facts resolution failures"}),
		fetches:             cnt("agent_manifest_fetch_count", "Remote manifest fetches", "manifest"),
		fetchErrors:         cnt("agent_manifest_fetch_error_count", "Remote manifest fetch failures", "manifest"),
		manifestDuration:    sum("manifest_apply_duration_seconds", "Time taken to apply an entire manifest", "source"),
		resourceDuration:    sum("resource_apply_duration_seconds", "Time taken to apply a resource", "type", "provider", "name"),
		stateTotal:          cnt("resource_state_total_count", "Total resources processed", "type", "name"),
		stateStable:         cnt("resource_state_stable_count", "Resources in stable state", "type", "name"),
		stateChanged:        cnt("resource_state_changed_count", "Resources that changed", "type", "name"),
		stateRefreshed:      cnt("resource_state_refreshed_count", "Resources that were refreshed", "type", "name"),
		stateFailed:         cnt("resource_state_failed_count", "Resources that failed", "type", "name"),
		stateError:          cnt("resource_state_error_count", "Resources with errors", "type", "name"),
		stateSkipped:        cnt("resource_state_skipped_count", "Resources that were skipped", "type", "name"),
		stateNoop:           cnt("resource_state_noop_count", "Resources in noop mode", "type", "name"),
		checkDuration:       sum("healthcheck_duration_seconds", "Time taken for health checks", "type", "name", "check"),
		checkStatus:         cnt("healthcheck_status_count", "Health check results by status", "type", "name", "status", "check"),
		factsGatherDuration: prometheus.NewSummary(prometheus.SummaryOpts{Name: name("facts_gather_duration_seconds"), Help: "Time taken to gather system facts"}),
		refusedBundles:      cnt("agent_bundle_refused_count", "Remote bundles refused: unsigned, untrusted or not allowed by the policy", "manifest"),
	}
	for _, c := range []prometheus.Collector{
		m.applyDuration, m.healthDuration, m.remediations, m.dataDuration, m.dataErrors, m.factsDuration,
		m.factsErrors, m.fetches, m.fetchErrors, m.manifestDuration, m.resourceDuration, m.stateTotal,
		m.stateStable, m.stateChanged, m.stateRefreshed, m.stateFailed, m.stateError, m.stateSkipped,
		m.stateNoop, m.checkDuration, m.checkStatus, m.factsGatherDuration, m.refusedBundles,
	} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// observeReport counts a manifest run's events.
func (m *Metrics) observeReport(source string, rep *manifest.Report, took time.Duration) {
	if m == nil || rep == nil {
		return
	}
	m.manifestDuration.WithLabelValues(source).Observe(took.Seconds())
	for _, ev := range rep.Events {
		m.observeEvent(ev)
	}
}

func (m *Metrics) observeEvent(ev *protocol.TransactionEvent) {
	t, n := ev.Type, ev.Name
	m.stateTotal.WithLabelValues(t, n).Inc()
	m.resourceDuration.WithLabelValues(t, ev.Provider, n).Observe(ev.Duration.Seconds())
	switch {
	case ev.Failed:
		m.stateFailed.WithLabelValues(t, n).Inc()
	case ev.Skipped:
		m.stateSkipped.WithLabelValues(t, n).Inc()
	case ev.Changed:
		m.stateChanged.WithLabelValues(t, n).Inc()
	default:
		m.stateStable.WithLabelValues(t, n).Inc()
	}
	if ev.Refreshed {
		m.stateRefreshed.WithLabelValues(t, n).Inc()
	}
	if ev.Noop {
		m.stateNoop.WithLabelValues(t, n).Inc()
	}
	if len(ev.Errors) > 0 {
		m.stateError.WithLabelValues(t, n).Inc()
	}
	for _, hc := range ev.HealthChecks {
		m.checkDuration.WithLabelValues(t, n, hc.Name).Observe(hc.Duration.Seconds())
		m.checkStatus.WithLabelValues(t, n, hc.Status, hc.Name).Inc()
	}
}
