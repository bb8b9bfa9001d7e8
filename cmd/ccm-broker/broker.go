package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/choria-io/fisk"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ccm-fleet/ccm/broker"
	"github.com/ccm-fleet/ccm/cmd/internal/program"
	"github.com/ccm-fleet/ccm/cmd/internal/provision"
	"github.com/ccm-fleet/ccm/jsstore"
	"github.com/ccm-fleet/ccm/protocol"
)

// provisionRetry is how soon the broker tries again to create the history
// stream and the registry while its cluster forms, and provisionTimeout
// bounds one try (a cluster with no leader yet does not answer).
const (
	provisionRetry   = 500 * time.Millisecond
	provisionTimeout = 2 * time.Second
)

// brokerFlags are the flags of ccm-broker run.
type brokerFlags struct {
	cfg         broker.Config
	routes      []string
	replicas    int
	maxAge      string
	maxStore    string
	registryTTL time.Duration
	maxStoreSet bool
	conf        configFlags
	cpuProfile  string
}

func (a *app) registerRun(cli *fisk.Application) {
	f := &brokerFlags{}
	cmd := cli.Command("run", "Run an embedded NATS broker with JetStream until interrupted, alone or as one of a cluster (the default command: ccm-broker --listen ... is ccm-broker run --listen ...)").Default()
	f.conf.set = map[string]*bool{}
	f.conf.flag(cmd, "listen", "Client address host:port").Default(broker.DefaultListen).StringVar(&f.cfg.Listen)
	f.conf.flag(cmd, "store", "JetStream store directory (default: a temporary directory removed at exit)").PlaceHolder("DIR").StringVar(&f.cfg.StoreDir)
	f.conf.flag(cmd, "name", "This server's name, unique in the cluster (required with --cluster-listen)").PlaceHolder("NAME").StringVar(&f.cfg.ServerName)
	f.conf.flag(cmd, "cluster-listen", "Route address host:port other brokers connect to; turns clustering on").PlaceHolder("HOST:PORT").StringVar(&f.cfg.Cluster.Listen)
	f.conf.flag(cmd, "routes", "Route URLs of the cluster's brokers, this one may be included (comma separated or repeated), e.g. nats-route://10.0.0.1:6222").PlaceHolder("URL").StringsVar(&f.routes)
	f.conf.flag(cmd, "cluster-name", "The cluster's name, the same on every broker").Default("ccm").StringVar(&f.cfg.Cluster.Name)
	cmd.Flag("replicas", "Replicas of the history and the registry (default: 1, or the cluster's size up to 3)").PlaceHolder("N").IntVar(&f.replicas)
	cmd.Flag("max-store", "Most bytes the JetStream store may hold, e.g. 20GiB; capped to the space the disk has for it (default: 75% of that space)").PlaceHolder("SIZE").IsSetByUser(&f.maxStoreSet).StringVar(&f.maxStore)
	cmd.Flag("history-max-age", "How long history records are kept (s, m, h or d)").Default("30d").StringVar(&f.maxAge)
	program.DurationVar(cmd.Flag("registry-ttl", "How long a registry entry lives after its agent's last heartbeat").Default(jsstore.DefaultRegistryTTL.String()), &f.registryTTL)
	f.conf.flag(cmd, "tlscert", "TLS server certificate (PEM); turns TLS on and refuses plaintext clients").PlaceHolder("FILE").StringVar(&f.cfg.TLS.Cert)
	f.conf.flag(cmd, "tlskey", "Private key of --tlscert (PEM)").PlaceHolder("FILE").StringVar(&f.cfg.TLS.Key)
	f.conf.flag(cmd, "tlsca", "Certificate authorities (PEM) client and route certificates are verified against").PlaceHolder("FILE").StringVar(&f.cfg.TLS.CA)
	f.conf.flag(cmd, "tls-verify", "Require every client to present a certificate signed by --tlsca (mutual TLS)").UnNegatableBoolVar(&f.cfg.TLS.Verify)
	f.conf.flag(cmd, "auth-file", "YAML file of the users clients must authenticate as, with their permissions; read again on SIGHUP").PlaceHolder("FILE").StringVar(&f.cfg.AuthFile)
	registerConfigFlags(cmd, f)
	cmd.Flag("cpuprofile", "Write a CPU profile of the broker to this file until it stops (benchmarks)").Hidden().PlaceHolder("FILE").StringVar(&f.cpuProfile)
	cmd.Action(func(*fisk.ParseContext) error { return a.runBroker(f) })
}

func (a *app) runBroker(f *brokerFlags) error {
	age, err := provision.ParseAge(f.maxAge)
	if err != nil {
		return program.Exit(protocol.ExitError, fmt.Errorf("--history-max-age: %w", err))
	}
	if f.maxStore != "" {
		size, err := provision.ParseSize(f.maxStore)
		if err != nil || size <= 0 {
			return program.Exit(protocol.ExitError, fmt.Errorf("--max-store %q: use a size such as 20GiB or 500MB", f.maxStore))
		}
		f.cfg.MaxStore = size
	}
	cfg, err := f.configuration()
	if err != nil {
		return program.Exit(protocol.ExitError, err)
	}
	stopProfile, err := program.StartCPUProfile(f.cpuProfile)
	if err != nil {
		return program.Exit(protocol.ExitError, err)
	}
	defer stopProfile()
	ctx, stop := a.signalContext()
	defer stop()
	b, err := broker.New(cfg, broker.WithLogger(a.Logger()))
	if err != nil {
		return program.Exit(protocol.ExitError, err)
	}
	// Catch SIGHUP before the broker starts, so an early one reloads
	// instead of ending the process.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	if err := b.Start(ctx); err != nil {
		return program.Exit(protocol.ExitError, err)
	}
	a.announce(a.Stdout, fmt.Sprintf("broker listening on %s", b.ClientURL()), "broker listening", "url", b.ClientURL())
	if route := b.RouteURL(); route != "" {
		a.announce(a.Stdout, fmt.Sprintf("cluster %s: routes on %s", cfg.Cluster.Name, route), "cluster routes listening", "cluster", cfg.Cluster.Name, "url", route)
	}
	if text, msg, args := topologyText(b, cfg); text != "" {
		a.announce(a.Stdout, text, msg, args...)
	}
	replicas := f.replicas
	if replicas <= 0 {
		replicas = min(b.ClusterSize(), 3)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sites := cfg.LeafNodes.Sites
		if !a.provisionBroker(ctx, b, jsstore.HistoryConfig{Replicas: replicas, MaxAge: age, Sources: sites}, jsstore.RegistryConfig{Replicas: replicas, TTL: f.registryTTL, Sources: sites}, cfg.HubDomain()) {
			return
		}
		switch {
		case cfg.IsHub():
			var watches sync.WaitGroup
			watches.Go(func() { a.guardConsumers(ctx, b) })
			if len(sites) > 0 && replicas > 1 {
				a.watchSourcing(ctx, b, cfg.ServerName)
			}
			watches.Wait()
		case cfg.IsSite():
			a.watchMirror(ctx, b, jsstore.AssignmentsConfig{Replicas: replicas, Hub: cfg.HubDomain()})
		}
	}()
	reloaded := make(chan struct{})
	go func() {
		defer close(reloaded)
		a.reloadOnHangup(ctx, b, hup)
	}()
	<-ctx.Done()
	<-done
	<-reloaded
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), broker.DefaultReadyTimeout)
	defer cancel()
	if err := b.Shutdown(sctx); err != nil {
		return program.Exit(protocol.ExitError, err)
	}
	return nil
}

// announce writes what the broker tells its operator whatever the log
// level (where it listens, history ready, a reload) on w: the line text
// as it is, or with --log-format json a JSON record at level INFO of msg
// and the attributes args, so that every line of a JSON log parses.
func (a *app) announce(w io.Writer, text, msg string, args ...any) {
	a.announceLevel(w, slog.LevelInfo, text, msg, args...)
}

// announceLevel is announce at level.
func (a *app) announceLevel(w io.Writer, level slog.Level, text, msg string, args ...any) {
	if a.LogFormat != "json" {
		fmt.Fprintln(w, text)
		return
	}
	program.NewLogger(w, "json", slog.LevelDebug).Log(context.Background(), level, msg, args...)
}

// provisionBroker creates or updates the history stream and the registry,
// retrying while the cluster forms (a replicated stream needs its peers)
// until it succeeds (true) or ctx ends or no connection can be made (false).
func (a *app) provisionBroker(ctx context.Context, b *broker.Broker, hc jsstore.HistoryConfig, rc jsstore.RegistryConfig, hub string) bool {
	log := a.Logger()
	nc, err := b.InProcessConn()
	if err != nil {
		log.Error("cannot set up history", "error", err)
		return false
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		log.Error("cannot set up history", "error", err)
		return false
	}
	for {
		pctx, cancel := context.WithTimeout(ctx, provisionTimeout)
		err := provision.Streams(pctx, js, hc, rc, hub, io.Discard)
		cancel()
		if errors.Is(err, jsstore.ErrSiteAssignments) {
			// Everything else is set up: the site keeps its own
			// assignments until its operator moves them.
			a.announceLevel(a.Stderr, slog.LevelWarn, "warning: "+err.Error(), "site assignments not mirrored", "error", err)
			hub, err = "", nil
		}
		if err == nil {
			sourcing := ""
			if len(hc.Sources) > 0 {
				sourcing = fmt.Sprintf(", sourcing the history and registry of sites %s", strings.Join(hc.Sources, ","))
			}
			if hub != "" {
				sourcing = fmt.Sprintf(", assignments mirrored from the hub (domain %s)", hub)
			}
			a.announce(a.Stderr, fmt.Sprintf("history stream %s, node registry %s and assignments %s ready (%s)%s", protocol.HistoryStream, protocol.NodesBucket, protocol.AssignmentsBucket, provision.ReplicasText(hc.Replicas), sourcing),
				"history ready", "stream", protocol.HistoryStream, "registry", protocol.NodesBucket, "assignments", protocol.AssignmentsBucket, "replicas", hc.Replicas, "sites", hc.Sources)
			return true
		}
		log.Info("history not set up yet, retrying", "error", err)
		select {
		case <-ctx.Done():
			return false
		case <-time.After(provisionRetry):
		}
	}
}

// reloadOnHangup reloads the broker's auth file and TLS files on every
// signal from hup until ctx ends, reporting each outcome on stderr.
func (a *app) reloadOnHangup(ctx context.Context, b *broker.Broker, hup <-chan os.Signal) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			rctx, cancel := context.WithTimeout(ctx, broker.DefaultReadyTimeout)
			err := b.Reload(rctx)
			cancel()
			if err != nil {
				a.announceLevel(a.Stderr, slog.LevelError, fmt.Sprintf("broker reload failed, the previous settings stay in force: %v", err), "broker reload failed, the previous settings stay in force", "error", err)
				continue
			}
			a.announce(a.Stderr, "broker reloaded", "broker reloaded")
		}
	}
}
