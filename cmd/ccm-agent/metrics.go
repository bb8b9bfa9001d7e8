package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	ccmagent "github.com/ccm-fleet/ccm/agent"
	"github.com/ccm-fleet/ccm/continuous"
)

// serveMetrics serves /metrics and /healthz (200 "ok" while the agent runs
// connected to NATS, 503 otherwise) on addr until the returned stop is
// called.
//
// With sources, CCM's choria_ccm_* metrics of the manifest sources are
// served too (as `ccm-agent agent` serves them) and returned.
func serveMetrics(ctx context.Context, addr string, sources bool, log *slog.Logger) (*ccmagent.Metrics, *continuous.Metrics, func(), error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m, err := ccmagent.NewMetrics(reg)
	if err != nil {
		return nil, nil, nil, err
	}
	var cm *continuous.Metrics
	if sources {
		if cm, err = continuous.NewMetrics(reg); err != nil {
			return nil, nil, nil, err
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("metrics: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if !m.Healthy() {
			http.Error(w, "not connected to NATS", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics server stopped", "error", err)
		}
	}()
	log.Info("serving metrics", "address", ln.Addr().String())
	stop := func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		<-done
	}
	return m, cm, stop, nil
}
