package main

import (
	"github.com/ccm-fleet/ccm/cmd/internal/program"
	"log/slog"

	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/choria-io/fisk"
	"github.com/nats-io/nats.go"

	ccmagent "github.com/ccm-fleet/ccm/agent"
	"github.com/ccm-fleet/ccm/cmd/internal/connflags"
	"github.com/ccm-fleet/ccm/facts"
	"github.com/ccm-fleet/ccm/natsconn"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/providers"
	"github.com/ccm-fleet/ccm/providers/gossrun"
	"github.com/ccm-fleet/ccm/resources/engine"
)

func (a *app) registerRun(cli *fisk.Application) {
	var (
		configFile    string
		stateDir      string
		maxConcurrent int
		queueLength   int
		metricsListen string
		heartbeat     time.Duration
		factsInterval time.Duration
		site          string
		ff            factFlags
		sec           securityFlags
	)
	cmd := cli.Command("run", "Serve fleet requests from NATS until interrupted; only requests signed by a key the policy trusts run (see --policy)")
	cmd.Flag("config", "Agent configuration file (YAML)").PlaceHolder("FILE").ExistingFileVar(&configFile)
	cmd.Flag("state-dir", "Directory for the agent's local state").PlaceHolder("DIR").StringVar(&stateDir)
	cmd.Flag("max-concurrent", "Requests run at once (default 4)").IntVar(&maxConcurrent)
	cmd.Flag("queue-length", "Accepted requests that may wait; more are answered busy (default 64)").IntVar(&queueLength)
	cmd.Flag("metrics-listen", "Serve Prometheus metrics on this address, e.g. 127.0.0.1:9100").PlaceHolder("ADDR").StringVar(&metricsListen)
	program.DurationVar(cmd.Flag("heartbeat", "How often to refresh this host's node registry entry (default 30s)").PlaceHolder("DURATION"), &heartbeat)
	program.DurationVar(cmd.Flag("facts-interval", "How often to gather facts again, moving subscriptions and the registry entry when they change; SIGHUP gathers them at once (default 5m)").PlaceHolder("DURATION"), &factsInterval)
	cmd.Flag("site", "Site (datacenter, region) of this host, announced as the site fact: letters, digits, '_' and '-' (overrides the config file's site)").PlaceHolder("NAME").StringVar(&site)
	ff.register(cmd)
	sec.register(cmd, true)
	conn := connflags.Register(cmd)
	a.registerPackageLockTimeout(cmd)

	cmd.Action(func(*fisk.ParseContext) error {
		cfg := ccmagent.Config{}
		if configFile != "" {
			var err error
			if cfg, err = ccmagent.LoadConfig(configFile); err != nil {
				return program.Exit(protocol.ExitError, err)
			}
		}
		if ff.identity != "" {
			cfg.Identity = ff.identity
		}
		if stateDir != "" {
			cfg.StateDir = stateDir
		}
		if site != "" {
			cfg.Site = site
			if err := cfg.ValidateConnection(); err != nil {
				return program.Exit(protocol.ExitError, err)
			}
		}
		if maxConcurrent > 0 {
			cfg.MaxConcurrent = maxConcurrent
		}
		if queueLength > 0 {
			cfg.QueueLength = queueLength
		}
		if heartbeat > 0 {
			cfg.Heartbeat = heartbeat
		}
		if factsInterval > 0 {
			cfg.FactsInterval = factsInterval
		}
		if metricsListen != "" {
			cfg.MetricsListen = metricsListen
		}
		if a.packageLockTimeout > 0 {
			cfg.PackageLockTimeout = a.packageLockTimeout
		}
		connOpts, err := conn.Options("", nil, natsconn.Options{
			Servers: strings.Join(cfg.Servers, ","), Context: cfg.Context, Creds: cfg.Creds, NKey: cfg.NKey,
			TLSCert: cfg.TLS.Cert, TLSKey: cfg.TLS.Key, TLSCA: cfg.TLS.CA, InboxPrefix: cfg.InboxPrefix,
		})
		if err != nil {
			return program.Exit(protocol.ExitError, err)
		}
		// Connection settings that cannot work stop the agent before it
		// waits for NATS.
		if _, err := connOpts.Resolve(); err != nil {
			return program.Exit(protocol.ExitError, err)
		}
		if err := sec.apply(&cfg); err != nil {
			return program.Exit(protocol.ExitError, err)
		}
		// A policy that does not load stops the agent before it gathers
		// facts, connects or starts anything.
		var policy *ccmagent.Policy
		if cfg.Policy != "" {
			p, err := ccmagent.LoadPolicy(cfg.Policy)
			if err != nil {
				return program.Exit(protocol.ExitError, err)
			}
			policy = p
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()

		opts := facts.Options{Identity: cfg.Identity, File: cfg.FactsFile, Pairs: ff.pairs, Site: cfg.Site}
		if ff.file != "" {
			opts.File = ff.file
		}
		for k, v := range cfg.Facts {
			opts.Pairs = append([]string{k + "=" + v}, opts.Pairs...)
		}
		fs, err := facts.Gather(ctx, opts)
		if err != nil {
			return program.Exit(protocol.ExitError, err)
		}
		log := a.DaemonLogger(cfg.Log.Format, cfg.Log.Level)
		id, _ := fs["identity"].(string)
		// An agent starts with its host, often before NATS is reachable:
		// it waits for NATS (SIGINT or SIGTERM meanwhile ends it cleanly)
		// and serves once connected.
		connOpts.Name, connOpts.Logger = "ccm-agent "+id, log
		nc, err := natsconn.ConnectRetry(ctx, connOpts)
		if err != nil {
			if ctx.Err() != nil {
				log.Info("stopped before NATS was reachable")
				return nil
			}
			return program.Exit(protocol.ExitError, err)
		}
		defer nc.Close()
		dir := cfg.StateDir
		if dir == "" {
			dir = ccmagent.DefaultStateDir
		}
		ex, unsupervise := superviseCommands(ctx, log, stateInstance("agent", dir))
		defer unsupervise()
		// The engine's and the providers' lines name the host, as the
		// agent's own do (the agent adds identity to its logger itself).
		hostLog := log.With("identity", id)
		reg, err := providers.Builtin(providers.Options{Runner: ex, Log: hostLog, PackageLockTimeout: cfg.PackageLockTimeout})
		if err != nil {
			return program.Exit(protocol.ExitError, err)
		}
		gather := func(ctx context.Context) (map[string]any, error) { return facts.Gather(ctx, opts) }
		agentOpts := []ccmagent.Option{ccmagent.WithLogger(log), ccmagent.WithVersion(version), ccmagent.WithPolicy(policy), ccmagent.WithFactsSource(gather), ccmagent.WithService()}
		if cfg.MetricsListen != "" {
			m, cm, stopMetrics, err := serveMetrics(ctx, cfg.MetricsListen, cfg.Sources != nil, log)
			if err != nil {
				return program.Exit(protocol.ExitError, err)
			}
			defer stopMetrics()
			agentOpts = append(agentOpts, ccmagent.WithMetrics(m))
			if cm != nil {
				agentOpts = append(agentOpts, ccmagent.WithSourceMetrics(cm))
			}
		}
		ag, err := ccmagent.New(cfg, nc, engine.New(reg, engine.WithLogger(hostLog), engine.WithHealthRunner(providers.HealthRunner(ex)), engine.WithScopedGoss(gossrun.New())), fs, agentOpts...)
		if err != nil {
			return program.Exit(protocol.ExitError, err)
		}
		runCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		go refreshOnHangup(runCtx, ag, log)
		if err := ag.Run(runCtx); err != nil {
			return program.Exit(protocol.ExitError, err)
		}
		return nil
	})
}

// refreshOnHangup gathers the agent's facts again on each SIGHUP until ctx
// is done.
func refreshOnHangup(ctx context.Context, ag *ccmagent.Agent, log *slog.Logger) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			if err := ag.RefreshFacts(ctx); err != nil {
				log.Warn("SIGHUP: could not gather facts again; the previous ones stay", "error", err)
				continue
			}
			log.Info("SIGHUP: facts gathered again")
		}
	}
}

func (a *app) registerSimulate(cli *fisk.Application) {
	var (
		count     int
		first     int
		prefix    string
		pairs     []string
		varies    []string
		stateDir  string
		heartbeat time.Duration
		profiles  simProfiles
		site      string
		sec       securityFlags
	)
	cmd := cli.Command("simulate", "Run many agents in this process, each with its own connection, identity and facts")
	cmd.Flag("count", "How many agents").Default("10").IntVar(&count)
	cmd.Flag("first", "Number of the first agent, so that several simulations share one fleet without sharing identities (--count 5000 --first 5001: PREFIX-5001 … PREFIX-10000)").Default("1").IntVar(&first)
	cmd.Flag("identity-prefix", "Identities are PREFIX-0001, PREFIX-0002, …").Default("sim").StringVar(&prefix)
	cmd.Flag("fact", "Fact every agent has, key=value (repeatable)").PlaceHolder("K=V").StringsVar(&pairs)
	cmd.Flag("vary", "Fact that takes each value in turn, key=v1,v2 (repeatable; combinations are spread evenly)").PlaceHolder("K=V1,V2").StringsVar(&varies)
	cmd.Flag("site", "Site every agent announces as its site fact (--vary site=a,b spreads them over several)").PlaceHolder("NAME").StringVar(&site)
	cmd.Flag("state-dir", "Directory below which each agent keeps its state in a directory named by its identity (default /var/lib/ccm-agent)").PlaceHolder("DIR").StringVar(&stateDir)
	program.DurationVar(cmd.Flag("heartbeat", "How often each agent refreshes its node registry entry (default 30s)").PlaceHolder("DURATION"), &heartbeat)
	cmd.Flag("cpuprofile", "Write a CPU profile of the simulation to this file (benchmarks)").Hidden().PlaceHolder("FILE").StringVar(&profiles.cpu)
	cmd.Flag("memprofile", "Write a heap profile of the simulation to this file when it is asked to stop, before its agents stop (benchmarks)").Hidden().PlaceHolder("FILE").StringVar(&profiles.mem)
	sec.register(cmd, false)
	conn := connflags.Register(cmd)

	cmd.Action(func(*fisk.ParseContext) error {
		if profiles.mem != "" {
			runtime.MemProfileRate = 4096 // every allocation's share, not a 512 KiB sample
		}
		stopProfile, err := program.StartCPUProfile(profiles.cpu)
		if err != nil {
			return program.Exit(protocol.ExitError, err)
		}
		defer stopProfile()
		base := map[string]any{"simulated": true}
		if err := facts.Merge(base, facts.Options{Pairs: pairs, Site: site}); err != nil {
			return program.Exit(protocol.ExitError, err)
		}
		var vary []ccmagent.Vary
		for _, s := range varies {
			v, err := ccmagent.ParseVary(s)
			if err != nil {
				return program.Exit(protocol.ExitError, err)
			}
			if v.Key == protocol.SiteFact && site != "" {
				return program.Exit(protocol.ExitError, fmt.Errorf("--site %s and --vary %s: give one or the other", site, s))
			}
			vary = append(vary, v)
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		log := a.DaemonLogger("", "")
		ctx = profiles.heapOnStop(ctx, log)
		dir := stateDir
		if dir == "" {
			dir = ccmagent.DefaultStateDir
		}
		ex, unsupervise := superviseCommands(ctx, log, stateInstance("simulate", dir))
		defer unsupervise()
		reg, err := providers.Builtin(providers.Options{Runner: ex, Log: log})
		if err != nil {
			return program.Exit(protocol.ExitError, err)
		}
		simCfg := ccmagent.Config{StateDir: stateDir, Heartbeat: heartbeat, Site: site}
		if err := sec.apply(&simCfg); err != nil {
			return program.Exit(protocol.ExitError, err)
		}
		sim := ccmagent.Simulation{
			Count: count, First: first - 1, Prefix: prefix, Facts: base, Vary: vary,
			Config: simCfg,
			Engine: engine.New(reg, engine.WithHealthRunner(providers.HealthRunner(ex)), engine.WithScopedGoss(gossrun.New())), Log: log, Version: version,
			Connect: func(ctx context.Context, name string) (*nats.Conn, error) {
				o, err := conn.Options("ccm-agent simulate "+name, log, natsconn.Options{})
				if err != nil {
					return nil, err
				}
				// Like a real agent's, a simulated agent's connection
				// waits for a broker that does not answer yet: 50,000
				// connecting at once saw brokers too busy to greet some
				// within the connect timeout, and one such failure ended
				// every agent of its process.
				return natsconn.ConnectRetry(ctx, o)
			},
			Ready: func() {
				fmt.Fprintf(a.Stderr, "%d simulated agents serving (%s …)\n", count, ccmagent.SimulatedIdentity(prefix, first-1))
			},
		}
		if err := sim.Run(ctx); err != nil {
			return program.Exit(protocol.ExitError, err)
		}
		return nil
	})
}

// simProfiles are the profiles simulate writes for benchmarks: cpu over
// the whole run, mem (the heap) when the simulation is asked to stop.
type simProfiles struct{ cpu, mem string }

// heapOnStop returns a context that ends after ctx does and, when p.mem is
// set, after the heap profile is written to p.mem while every agent still
// serves. The log line names the profile, how many goroutines there were
// and the heap and stacks in use before the collection the profile needs.
func (p simProfiles) heapOnStop(ctx context.Context, log *slog.Logger) context.Context {
	if p.mem == "" {
		return ctx
	}
	run, cancel := context.WithCancel(context.WithoutCancel(ctx))
	go func() {
		defer cancel()
		<-ctx.Done()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		goroutines := runtime.NumGoroutine()
		runtime.GC() // the profile is as of the last collection
		if err := writeHeapProfile(p.mem); err != nil {
			log.Error("could not write the heap profile", "file", p.mem, "error", err)
			return
		}
		log.Info("heap profile written", "file", p.mem, "goroutines", goroutines,
			"heap_inuse_before_gc", before.HeapInuse, "stack_inuse", before.StackInuse)
	}()
	return run
}

// writeHeapProfile writes the heap profile to path in pprof's text form,
// which ends with the runtime's memory statistics.
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("heap").WriteTo(f, 1); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// securityFlags are the policy flags of run and simulate.
type securityFlags struct {
	policy   string
	insecure bool
	auditLog string
}

func (s *securityFlags) register(cmd *fisk.CmdClause, audit bool) {
	cmd.Flag("policy", "Policy file (YAML): the keys whose signed requests run, and for which resource types; without one every request is refused").PlaceHolder("FILE").StringVar(&s.policy)
	cmd.Flag("insecure", "Accept unsigned requests from anyone who can publish to the agent's subjects (demos and tests only)").BoolVar(&s.insecure)
	if audit {
		cmd.Flag("audit-log", "Audit log file, one JSON line per request (default <state-dir>/audit.log)").PlaceHolder("FILE").StringVar(&s.auditLog)
	}
}

// apply sets the flags on cfg and checks that a policy file loads, so a
// broken policy stops the command before it connects.
func (s *securityFlags) apply(cfg *ccmagent.Config) error {
	if s.policy != "" {
		cfg.Policy = s.policy
	}
	if s.insecure {
		cfg.Insecure = true
	}
	if s.auditLog != "" {
		cfg.AuditLog = s.auditLog
	}
	if cfg.Policy != "" {
		if _, err := ccmagent.LoadPolicy(cfg.Policy); err != nil {
			return err
		}
	}
	return nil
}
