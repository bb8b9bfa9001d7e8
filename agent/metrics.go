package agent

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ccm-fleet/ccm/protocol"
)

// Metrics are the agent's Prometheus metrics. They are optional: an agent
// without them records nothing.
type Metrics struct {
	requests  *prometheus.CounterVec
	duration  prometheus.Histogram
	busy      prometheus.Counter
	resources *prometheus.CounterVec
	queue     prometheus.Gauge
	drops     prometheus.Counter
}

// NewMetrics creates the metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "ccm", Subsystem: "agent", Name: "requests_total",
			Help: "Fleet requests received, by outcome (executed, ignored, error) and error code.",
		}, []string{"outcome", "code"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "ccm", Subsystem: "agent", Name: "request_duration_seconds",
			Help:    "Time to run an accepted fleet request, queue wait excluded.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10),
		}),
		busy: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "ccm", Subsystem: "agent", Name: "busy_rejections_total",
			Help: "Requests answered busy because the queue was full.",
		}),
		resources: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "ccm", Subsystem: "agent", Name: "resources_total",
			Help: "Resources applied, by type and outcome (stable, changed, would change, refreshed, failed, skipped).",
		}, []string{"type", "outcome"}),
		queue: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "ccm", Subsystem: "agent", Name: "queue_depth",
			Help: "Accepted requests waiting to run.",
		}),
		drops: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "ccm", Subsystem: "agent", Name: "dropped_messages_total",
			Help: "Messages NATS dropped before the agent took them (slow consumer); their requesters got no reply.",
		}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.duration, m.busy, m.resources, m.queue, m.drops} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// WithMetrics makes the agent record into m.
func WithMetrics(m *Metrics) Option { return func(a *Agent) { a.metrics = m } }

func (m *Metrics) request(outcome string, code protocol.Code) {
	if m == nil {
		return
	}
	m.requests.WithLabelValues(outcome, string(code)).Inc()
	if code == protocol.CodeBusy {
		m.busy.Inc()
	}
}

func (m *Metrics) finished(took time.Duration, events []*protocol.TransactionEvent) {
	if m == nil {
		return
	}
	m.duration.Observe(took.Seconds())
	for _, ev := range events {
		m.resources.WithLabelValues(ev.Type, ev.Outcome()).Inc()
	}
}

func (m *Metrics) queueDepth(n int) {
	if m != nil {
		m.queue.Set(float64(n))
	}
}

// RequestsCounter exposes the requests counter (outcome, code), for tests
// and for callers that export it elsewhere.
func (m *Metrics) RequestsCounter() *prometheus.CounterVec { return m.requests }

// ResourcesCounter exposes the resources counter (type, outcome).
func (m *Metrics) ResourcesCounter() *prometheus.CounterVec { return m.resources }

func (m *Metrics) dropped(n int) {
	if m != nil {
		m.drops.Add(float64(n))
	}
}
