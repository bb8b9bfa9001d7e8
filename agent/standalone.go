package agent

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ccm-fleet/ccm/continuous"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources/engine"
)

// StandaloneOptions are what NewStandalone needs. Identity, StateDir,
// Engine, Keys and AuditLog are required.
type StandaloneOptions struct {
	// Identity names this host in history and audit lines.
	Identity string
	// StateDir holds the history spool.
	StateDir string
	// Engine runs the manifests.
	Engine *engine.Engine
	// Keys sign the history records.
	Keys *protocol.KeySigner
	// AuditLog is the audit log file: a line per run, and the continuous
	// agent's lines (see Auditor).
	AuditLog string
	// Conn, when set, is the NATS connection whose JetStream the runs are
	// recorded in; without one history is off.
	Conn *nats.Conn
	// Metrics, when set, count the runs (ccm_agent_*).
	Metrics *Metrics
	// Version is the build information the metrics show.
	Version string
	// Log receives progress; nil discards.
	Log *slog.Logger
}

// Standalone runs the applies of CCM's continuous agent on its own
// (`ccm-agent agent`, no fleet requests) through the fleet agent's
// pipeline, as `ccm-agent run` runs its manifest sources: each apply
// gets an audit line, is counted in the agent's metrics and, with a NATS
// connection, is recorded in history marked with its source and trigger.
type Standalone struct {
	exec    *executor
	audit   *auditLog
	nc      *nats.Conn
	metrics *Metrics
	version string
	timeout time.Duration
}

// NewStandalone opens the audit log and prepares the pipeline.
func NewStandalone(o StandaloneOptions) (*Standalone, error) {
	if o.Identity == "" || o.StateDir == "" || o.Engine == nil || o.Keys == nil || o.AuditLog == "" {
		return nil, errors.New("standalone agent: Identity, StateDir, Engine, Keys and AuditLog are required")
	}
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cfg := Config{Identity: o.Identity, StateDir: o.StateDir}.WithDefaults()
	st := &setup{metrics: o.Metrics}
	if o.Conn != nil {
		js, err := jetstream.New(o.Conn)
		if err != nil {
			return nil, err
		}
		st.js = js
	}
	var err error
	if st.audit, err = openAuditLog(o.AuditLog); err != nil {
		return nil, err
	}
	return &Standalone{
		exec: newExecutor(cfg, st, o.Keys, o.Engine, log, time.Now), audit: st.audit, nc: o.Conn,
		metrics: o.Metrics, version: o.Version, timeout: cfg.ShutdownTimeout,
	}, nil
}

// Applier runs the continuous agent's applies through the pipeline.
func (s *Standalone) Applier() continuous.Applier { return &sourceApplier{x: s.exec} }

// Auditor writes the continuous agent's lines (bundles taken and
// refused) to the same audit log.
func (s *Standalone) Auditor() continuous.Auditor { return sourceAuditor{s.audit} }

// Recording reports whether the runs are recorded in history.
func (s *Standalone) Recording() bool { return s.exec.fin.history != nil }

// Start starts writing history (with a connection) and binds the
// metrics; the returned stop lets history write (or spool) what it holds
// and closes the audit log.
func (s *Standalone) Start(ctx context.Context) (stop func()) {
	h := s.exec.fin.history
	stopHistory := func() {}
	g := gauges{connected: func() bool { return false }, spooled: func() int { return 0 }}
	if h != nil {
		stopHistory = goHistory(ctx, h, s.timeout, s.exec.log)
		g = liveGauges(s.nc, h.spool)
	}
	s.metrics.bind(s.version, g)
	return func() {
		stopHistory()
		_ = s.audit.close()
	}
}
