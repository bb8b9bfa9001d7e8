package agent

import (
	"runtime"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ccm-fleet/ccm/protocol"
)

// Metrics are the agent's Prometheus metrics. They are optional: an agent
// without them records nothing.
type Metrics struct {
	requests  *prometheus.CounterVec
	errors    *prometheus.CounterVec
	duration  prometheus.Histogram
	busy      prometheus.Counter
	resources *prometheus.CounterVec
	queue     prometheus.Gauge
	drops     prometheus.Counter
	build     *prometheus.GaugeVec
	lastOK    prometheus.Gauge
	runs      *runGauges

	// guards live: what the gauges read of the agent recording into m,
	// set when it runs
	mu   sync.Mutex
	live *gauges
}

// gauges is what the metrics read of the agent that records into them:
// whether it is connected to NATS and how many records its spool holds.
type gauges struct {
	connected func() bool
	spooled   func() int
}

// NewMetrics creates the metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "ccm", Subsystem: "agent", Name: "requests_total",
			Help: "Fleet requests received, by outcome (executed, ignored, error).",
		}, []string{"outcome"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "ccm", Subsystem: "agent", Name: "request_errors_total",
			Help: "Fleet requests answered with a request-level error, by error code.",
		}, []string{"code"}),
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
			Help: "Resources applied, by type and outcome (stable, changed, would_change, refreshed, failed, skipped).",
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
	m.build = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "ccm", Subsystem: "agent", Name: "build_info",
		Help: "Always 1: the agent's version and the Go version it was built with.",
	}, []string{"version", "go_version"})
	m.lastOK = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: "ccm", Subsystem: "agent", Name: "last_request_timestamp_seconds",
		Help: "When the last request was run without a request-level error (Unix seconds; 0: none yet).",
	})
	m.runs = newRunGauges(time.Now)
	for _, c := range []prometheus.Collector{m.requests, m.errors, m.runs, m.duration, m.busy, m.resources, m.queue, m.drops, m.build, m.lastOK, m.connectedGauge(), m.spoolGauge()} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	m.initLabels()
	return m, nil
}

// connectedGauge reads whether the agent is connected to NATS.
func (m *Metrics) connectedGauge() prometheus.GaugeFunc {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: "ccm", Subsystem: "agent", Name: "nats_connected",
		Help: "1 while the agent is connected to NATS, 0 otherwise.",
	}, func() float64 {
		if m.Healthy() {
			return 1
		}
		return 0
	})
}

// spoolGauge reads how many records the agent's spool holds.
func (m *Metrics) spoolGauge() prometheus.GaugeFunc {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: "ccm", Subsystem: "agent", Name: "spool_records",
		Help: "History records kept in the spool until JetStream takes them.",
	}, func() float64 {
		if g := m.running(); g != nil {
			return float64(g.spooled())
		}
		return 0
	})
}

// initLabels makes every label set exist from the start, so a rate over a
// counter that has not moved yet is 0, not absent.
func (m *Metrics) initLabels() {
	for _, o := range []string{"executed", "ignored", "error"} {
		m.requests.WithLabelValues(o)
	}
	for _, c := range protocol.Codes {
		m.errors.WithLabelValues(string(c))
	}
	for _, t := range protocol.Types {
		for _, o := range protocol.EventOutcomes {
			m.resources.WithLabelValues(t, o)
		}
	}
}

// liveGauges reads nc's connection and sp's records.
func liveGauges(nc *nats.Conn, sp *spool) gauges {
	return gauges{connected: nc.IsConnected, spooled: func() int { return sp.stats().Records }}
}

// bind makes the gauges read g (the running agent's connection and
// spool), and sets the build information to version.
func (m *Metrics) bind(version string, g gauges) {
	if m == nil {
		return
	}
	m.mu.Lock()
	m.live = &g
	m.mu.Unlock()
	m.build.Reset()
	m.build.WithLabelValues(version, runtime.Version()).Set(1)
}

// running is what the gauges read, nil before an agent runs.
func (m *Metrics) running() *gauges {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.live
}

// Healthy reports whether the agent recording into m runs and is connected
// to NATS: what /healthz answers.
func (m *Metrics) Healthy() bool {
	if m == nil {
		return false
	}
	g := m.running()
	return g != nil && g.connected()
}

// WithMetrics makes the agent record into m.
func WithMetrics(m *Metrics) Option { return func(a *Agent) { a.setup.metrics = m } }

// request counts a request by outcome; code is the error's, for an error
// only.
func (m *Metrics) request(outcome string, code protocol.Code) {
	if m == nil {
		return
	}
	m.requests.WithLabelValues(outcome).Inc()
	if code != "" {
		m.errors.WithLabelValues(string(code)).Inc()
	}
	if code == protocol.CodeBusy {
		m.busy.Inc()
	}
}

func (m *Metrics) finished(took time.Duration, events []*protocol.TransactionEvent) {
	if m == nil {
		return
	}
	m.lastOK.SetToCurrentTime()
	m.duration.Observe(took.Seconds())
	for _, ev := range events {
		m.resources.WithLabelValues(ev.Type, ev.Outcome()).Inc()
	}
	m.runs.checked(events)
}

func (m *Metrics) queueDepth(n int) {
	if m != nil {
		m.queue.Set(float64(n))
	}
}

// RequestsCounter exposes the requests counter (outcome), for tests and
// for callers that export it elsewhere.
func (m *Metrics) RequestsCounter() *prometheus.CounterVec { return m.requests }

// ErrorsCounter exposes the request errors counter (code).
func (m *Metrics) ErrorsCounter() *prometheus.CounterVec { return m.errors }

// ResourcesCounter exposes the resources counter (type, outcome).
func (m *Metrics) ResourcesCounter() *prometheus.CounterVec { return m.resources }

func (m *Metrics) dropped(n int) {
	if m != nil {
		m.drops.Add(float64(n))
	}
}

// BuildInfo exposes the build information gauge (version, go_version).
func (m *Metrics) BuildInfo() *prometheus.GaugeVec { return m.build }

// LastRequest exposes the time of the last request run without a
// request-level error.
func (m *Metrics) LastRequest() prometheus.Gauge { return m.lastOK }
