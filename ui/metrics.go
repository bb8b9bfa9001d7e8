package ui

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the dashboard's own Prometheus metrics, served at /metrics
// behind the same token check as the pages: requests by page and status
// code, the time to answer them, and what the dashboard holds.
type metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// pageNames are the values of the page label: one per route, so the
// label's values are bounded whatever paths clients ask for.
var pageNames = []string{"fleet", "runs", "run", "host", "drift", "assignments", "assignment", "services",
	"api_fleet", "api_runs", "api_run", "api_host", "api_drift", "api_assignments", "api_assignment", "api_services", "api_other",
	"events", "static", "login", "logout", "metrics", "other"}

func newMetrics(s *Server) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "ccm", Subsystem: "ui", Name: "requests_total",
			Help: "Requests answered, by page (one value per route) and HTTP status code.",
		}, []string{"page", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "ccm", Subsystem: "ui", Name: "request_duration_seconds",
			Help:    "Time to answer a request, by page; the live event stream is not timed.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10),
		}, []string{"page"}),
	}
	hosts := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "ccm", Subsystem: "ui", Name: "hosts",
		Help: "Hosts the dashboard holds from the node registry."}, func() float64 { h, _ := s.Counts(); return float64(h) })
	runs := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "ccm", Subsystem: "ui", Name: "runs",
		Help: "Runs the dashboard holds from the history stream."}, func() float64 { _, r := s.Counts(); return float64(r) })
	live := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "ccm", Subsystem: "ui", Name: "live_pages",
		Help: "Pages following live updates."}, func() float64 { return float64(s.hub.count()) })
	m.reg.MustRegister(m.requests, m.duration, hosts, runs, live,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// Every page exists at 0 from the start, for the common codes.
	for _, p := range pageNames {
		m.duration.WithLabelValues(p)
		m.requests.WithLabelValues(p, "200")
	}
	return m
}

// handler serves the metrics.
func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// pageOf names the route a path belongs to.
func pageOf(path string) string {
	switch {
	case path == "/":
		return "fleet"
	case path == "/runs":
		return "runs"
	case strings.HasPrefix(path, "/runs/"):
		return "run"
	case strings.HasPrefix(path, "/hosts/"):
		return "host"
	case path == "/drift":
		return "drift"
	case path == "/assignments":
		return "assignments"
	case strings.HasPrefix(path, "/assignments/"):
		return "assignment"
	case path == "/services":
		return "services"
	case strings.HasPrefix(path, "/api/"):
		return "api_" + apiPage(strings.TrimPrefix(path, "/api/v1/"))
	case path == "/events":
		return "events"
	case strings.HasPrefix(path, "/static/"), path == "/favicon.ico":
		return "static"
	case path == "/login", path == "/logout", path == "/metrics":
		return path[1:]
	}
	return "other"
}

// apiPage names the API document of a path below /api/v1/.
func apiPage(rest string) string {
	name, sub, _ := strings.Cut(rest, "/")
	switch {
	case sub == "" && (name == "fleet" || name == "runs" || name == "drift" || name == "assignments" || name == "services"):
		return name
	case sub != "" && !strings.Contains(sub, "/") && name == "runs":
		return "run"
	case sub != "" && !strings.Contains(sub, "/") && name == "hosts":
		return "host"
	case sub != "" && !strings.Contains(sub, "/") && name == "assignments":
		return "assignment"
	}
	return "other"
}

// statusWriter remembers the status code written; it passes Flush on
// (the live event stream needs it).
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		if w.code == 0 {
			w.code = http.StatusOK
		}
		f.Flush()
	}
}

// Unwrap gives http.ResponseController the writer underneath.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// observe serves r with next and counts it; it returns the status code
// answered and the time it took.
func (m *metrics) observe(w http.ResponseWriter, r *http.Request, next http.Handler) (code int, took time.Duration) {
	page := pageOf(r.URL.Path)
	start := time.Now()
	sw := &statusWriter{ResponseWriter: w}
	next.ServeHTTP(sw, r)
	took = time.Since(start)
	code = sw.code
	if code == 0 {
		code = http.StatusOK
	}
	m.requests.WithLabelValues(page, codeLabel(code)).Inc()
	if page != "events" {
		m.duration.WithLabelValues(page).Observe(took.Seconds())
	}
	return code, took
}

// codeLabel is a status code as a label value; codes outside HTTP's range
// share one.
func codeLabel(code int) string {
	if code < 100 || code > 599 {
		return "other"
	}
	return strconv.Itoa(code)
}

// count is how many pages follow live updates.
func (h *hub) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.clients)
}
