package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/choria-io/fisk"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	ccmagent "github.com/ccm-fleet/ccm/agent"
	"github.com/ccm-fleet/ccm/cmd/internal/connflags"
	"github.com/ccm-fleet/ccm/cmd/internal/program"
	"github.com/ccm-fleet/ccm/continuous"
	"github.com/ccm-fleet/ccm/facts"
	"github.com/ccm-fleet/ccm/natsconn"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/providers"
	"github.com/ccm-fleet/ccm/providers/gossrun"
	"github.com/ccm-fleet/ccm/registration"
	"github.com/ccm-fleet/ccm/resources/engine"
	"github.com/ccm-fleet/ccm/sources"
	"github.com/ccm-fleet/ccm/trust/policy"
)

// ccmAgentFlags are the flags of "agent".
type ccmAgentFlags struct {
	config      string
	policy      string
	auditLog    string
	monitorHost string
	key         string
	stream      string
	ff          factFlags
	conn        *connflags.Flags
}

func (a *app) registerCCMAgent(cli *fisk.Application) {
	c := &ccmAgentFlags{}
	cmd := cli.Command("agent", "Run CCM's continuous agent from its configuration file: apply every manifest each interval, run health checks between applies (CRITICAL remediates), apply changed remote bundles at once")
	cmd.Flag("config", "CCM agent configuration file").Default(continuous.DefaultConfigPath).PlaceHolder("FILE").StringVar(&c.config)
	cmd.Flag("policy", "Policy file (YAML): the keys whose signed bundles are applied and what they may do; without one only local manifests and checksum-pinned http(s) bundles are applied").PlaceHolder("FILE").StringVar(&c.policy)
	cmd.Flag("audit-log", "Audit log file, one JSON line per apply and per bundle taken or refused (default <cache_dir>/../audit.log)").PlaceHolder("FILE").StringVar(&c.auditLog)
	cmd.Flag("monitor-host", "Address the metrics of monitor_port listen on (default: every address, as CCM)").PlaceHolder("HOST").StringVar(&c.monitorHost)
	cmd.Flag("key", "This host's nkeys seed file, signing its run history and registrations; made (0600) when missing (default <cache_dir>/../agent.seed)").PlaceHolder("FILE").StringVar(&c.key)
	cmd.Flag("registration-stream", "The registration stream, for registration: jetstream").Default(registration.DefaultStream).StringVar(&c.stream)
	c.ff.register(cmd)
	c.conn = connflags.Register(cmd)
	cmd.Action(func(*fisk.ParseContext) error { return a.ccmAgent(c) })
}

// ccmAgent runs the continuous agent until interrupted.
func (a *app) ccmAgent(c *ccmAgentFlags) error {
	cfg, err := continuous.LoadConfig(c.config)
	if err != nil {
		return program.Exit(protocol.ExitError, err)
	}
	var pol *policy.Policy
	if c.policy != "" {
		if pol, err = policy.LoadPolicy(c.policy); err != nil {
			return program.Exit(protocol.ExitError, err)
		}
	}
	log := a.DaemonLogger("", cfg.LogLevel)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	var nc *nats.Conn
	var js jetstream.JetStream
	// A host that only reads registrations (a load balancer rendering its
	// upstreams with registrations()) needs NATS too: it connects when it
	// is told where NATS is.
	if needsNATS(cfg) || c.conn.Given() {
		if nc, err = a.ccmConnect(ctx, c, cfg, log); err != nil {
			return program.Exit(protocol.ExitError, err)
		}
		defer nc.Close()
		if js, err = jetstream.New(nc); err != nil {
			return program.Exit(protocol.ExitError, err)
		}
	} else {
		log.Info("run history is off: the configuration reads nothing from NATS (no obj:// manifest, kv:// data or registration) and no --server or --context was given, so there is no NATS connection to record runs on")
	}

	reg := prometheus.NewRegistry()
	metrics, err := continuous.NewMetrics(reg)
	if err != nil {
		return program.Exit(protocol.ExitError, err)
	}
	agentMetrics, err := ccmagent.NewMetrics(reg)
	if err != nil {
		return program.Exit(protocol.ExitError, err)
	}
	if cfg.MonitorPort > 0 {
		stopMetrics, err := serveCCMMetrics(ctx, net.JoinHostPort(c.monitorHost, strconv.Itoa(cfg.MonitorPort)), reg, log)
		if err != nil {
			return program.Exit(protocol.ExitError, err)
		}
		defer stopMetrics()
	}

	ex, unsupervise := superviseCommands(ctx, log, stateInstance("ccm", cfg.CacheDir))
	defer unsupervise()
	types, err := providers.Builtin(providers.Options{Runner: ex, Log: log})
	if err != nil {
		return program.Exit(protocol.ExitError, err)
	}
	identity := c.ff.identity
	gather := func(ctx context.Context) (map[string]any, error) {
		return facts.Gather(ctx, facts.Options{Identity: c.ff.identity, File: c.ff.file, Pairs: c.ff.pairs})
	}
	if identity == "" {
		if h, err := os.Hostname(); err == nil {
			identity = h
		}
	}
	signer, err := ccmSigner(c, cfg, nc != nil)
	if err != nil {
		return program.Exit(protocol.ExitError, err)
	}
	auditPath := c.auditLog
	if auditPath == "" {
		auditPath = filepath.Join(ccmBaseDir(cfg), "audit.log")
	}
	runs, err := ccmagent.NewStandalone(ccmagent.StandaloneOptions{
		Identity: identity, StateDir: ccmBaseDir(cfg), Keys: signer, AuditLog: auditPath, Conn: nc,
		Engine:  engine.New(types, engine.WithLogger(log), engine.WithHealthRunner(providers.HealthRunner(ex)), engine.WithGossRunner(gossrun.New())),
		Metrics: agentMetrics, Version: version, Log: log,
	})
	if err != nil {
		return program.Exit(protocol.ExitError, err)
	}
	stopRuns := runs.Start(ctx)
	defer stopRuns()
	var registrar continuous.Registrar
	if cfg.Registration != "" {
		registrar = &continuous.StreamRegistrar{JS: js, Stream: c.stream, Signer: signer, Core: cfg.Registration == continuous.RegistrationNATS, Host: identity}
		log.Info("registering stable resources", "destination", cfg.Registration, "signer", signer.PublicKey())
	}
	ag, err := continuous.New(continuous.Options{
		Registrar: registrar,
		Config:    cfg,
		Applier:   runs.Applier(),
		Facts:     gather,
		JS:        js,
		Policy:    pol,
		Auditor:   runs.Auditor(),
		Metrics:   metrics,
		Identity:  identity,
		Log:       log,
		Ready:     func() { log.Info("first apply of every manifest done", "manifests", len(cfg.Sources())) },
	})
	if err != nil {
		return program.Exit(protocol.ExitError, err)
	}
	log.Info("CCM agent starting", "config", c.config, "interval", cfg.IntervalDuration(), "health_check_interval", cfg.HealthCheckDuration(), "manifests", len(cfg.Sources()), "history", runs.Recording())
	if err := ag.Run(ctx); err != nil {
		return program.Exit(protocol.ExitError, err)
	}
	return nil
}

// ccmBaseDir is the directory above cache_dir: where the audit log, the
// host's key and the history spool are kept by default.
func ccmBaseDir(cfg *continuous.Config) string {
	return filepath.Dir(filepath.Clean(cfg.CacheDir))
}

// ccmSigner is this host's key, signing its history records and
// registrations: the --key seed file (default <cache_dir>/../agent.seed),
// made when missing; a key of this run only when nothing leaves the host
// (no NATS connection).
func ccmSigner(c *ccmAgentFlags, cfg *continuous.Config, connected bool) (*protocol.KeySigner, error) {
	var kp nkeys.KeyPair
	var err error
	if connected || cfg.Registration != "" {
		keyPath := c.key
		if keyPath == "" {
			keyPath = filepath.Join(ccmBaseDir(cfg), "agent.seed")
		}
		kp, err = loadOrCreateSeed(keyPath)
	} else {
		kp, err = nkeys.CreateUser()
	}
	if err != nil {
		return nil, err
	}
	return protocol.NewKeySigner(kp)
}

// loadOrCreateSeed reads a user seed file, or makes one (0600) when there
// is none.
func loadOrCreateSeed(path string) (nkeys.KeyPair, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		kp, err := nkeys.CreateUser()
		if err != nil {
			return nil, err
		}
		seed, err := kp.Seed()
		if err != nil {
			return nil, err
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, fmt.Errorf("key %s: %w", path, err)
		}
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return nil, fmt.Errorf("key %s: %w", path, err)
		}
		_, err = f.Write(seed)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, fmt.Errorf("key %s: %w", path, err)
		}
		return kp, nil
	}
	if err != nil {
		return nil, fmt.Errorf("key %s: %w", path, err)
	}
	if len(b) > 256 {
		return nil, fmt.Errorf("key %s: not an nkeys seed", path)
	}
	kp, err := nkeys.FromSeed(bytes.TrimSpace(b))
	if err != nil {
		return nil, fmt.Errorf("key %s: %w", path, err)
	}
	return kp, nil
}

// needsNATS says whether the configuration reads anything from NATS.
func needsNATS(cfg *continuous.Config) bool {
	if cfg.Registration != "" {
		return true
	}
	for _, s := range cfg.Sources() {
		if s.Kind == sources.KindObject {
			return true
		}
	}
	if u, err := continuous.ParseDataURL(cfg.ExternalDataURL); err == nil && u.Scheme == "kv" {
		return true
	}
	return false
}

// ccmConnect connects with the flags, else the configuration's
// nats_context when that context exists.
func (a *app) ccmConnect(ctx context.Context, c *ccmAgentFlags, cfg *continuous.Config, log *slog.Logger) (*nats.Conn, error) {
	base := natsconn.Options{}
	if p, err := natsconn.ContextPath(cfg.NATSContext); err == nil {
		if _, err := os.Stat(p); err == nil {
			base.Context = cfg.NATSContext
		}
	}
	opts, err := c.conn.Options("ccm-agent", log, base)
	if err != nil {
		return nil, err
	}
	if _, err := opts.Resolve(); err != nil {
		return nil, err
	}
	return natsconn.ConnectRetry(ctx, opts)
}

// serveCCMMetrics serves reg on addr at /metrics until the returned stop.
func serveCCMMetrics(ctx context.Context, addr string, reg *prometheus.Registry, log *slog.Logger) (func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("monitor_port: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics server stopped", "error", err)
		}
	}()
	log.Info("serving metrics", "address", ln.Addr().String())
	return func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		<-done
	}, nil
}
