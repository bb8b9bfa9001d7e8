package fleettest

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ccm-fleet/ccm/agent"
	"github.com/ccm-fleet/ccm/broker"
	"github.com/ccm-fleet/ccm/broker/brokertest"
	"github.com/ccm-fleet/ccm/jsstore"
	"github.com/ccm-fleet/ccm/natsconn"
	"github.com/ccm-fleet/ccm/providers"
	"github.com/ccm-fleet/ccm/providers/runner"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/engine"
)

// Prefix is the identity prefix of the simulated agents: sim-0001, ...
const Prefix = "sim"

// startTimeout bounds how long Start waits for every agent to serve, and
// the cleanup for them to stop.
const startTimeout = 30 * time.Second

// Fleet is a running broker with simulated agents.
type Fleet struct {
	// Broker is the embedded broker; its ClientURL is where to connect.
	Broker *broker.Broker
	// Identities are the agents' identities in order.
	Identities []string
	// Facts are the agents' facts, in the order of Identities.
	Facts []map[string]any
}

// URL is the broker's client URL.
func (f *Fleet) URL() string { return f.Broker.ClientURL() }

// Options change how StartWith starts a fleet.
type Options struct {
	// History creates the history stream and the node registry before the
	// agents start.
	History bool
	// Config is the agents' base configuration. Its StateDir defaults to a
	// directory below t.TempDir() and its ShutdownTimeout to 5s.
	Config agent.Config
	// Log, when set, receives the agents', the engine's and the providers'
	// logs; nil discards them.
	Log *slog.Logger
	// Listen is the broker's listen address (default a random loopback
	// port). A fixed one lets a test shut the broker down and start it
	// again on the same port (Broker.Shutdown, then Broker.Start: the
	// store is kept), as a broker that died and came back.
	Listen string
}

// Start starts a broker and count simulated agents whose facts are base
// plus one value of each vary ("key=v1,v2", see agent.ParseVary), and waits
// until all of them serve. The agents and the broker stop at t's cleanup.
func Start(t brokertest.TB, count int, base map[string]any, vary ...string) *Fleet {
	t.Helper()
	return StartWith(t, Options{}, count, base, vary...)
}

// StartWith is Start with options.
func StartWith(t brokertest.TB, o Options, count int, base map[string]any, vary ...string) *Fleet {
	t.Helper()
	b := brokertest.StartConfig(t, broker.Config{Listen: o.Listen})
	url := b.ClientURL()
	if o.History {
		if err := provision(url); err != nil {
			t.Fatalf("fleettest: %v", err)
			return nil
		}
	}
	cfg := o.Config
	if cfg.StateDir == "" {
		cfg.StateDir = t.TempDir()
	}
	if cfg.Policy == "" {
		// Without a policy the fleet takes unsigned requests.
		cfg.Insecure = true
	}
	if cfg.ShutdownTimeout == 0 {
		cfg.ShutdownTimeout = 5 * time.Second
	}

	var vs []agent.Vary
	for _, v := range vary {
		pv, err := agent.ParseVary(v)
		if err != nil {
			t.Fatalf("fleettest: %v", err)
			return nil
		}
		vs = append(vs, pv)
	}
	reg, err := providers.Builtin(providers.Options{Log: o.Log})
	if err != nil {
		t.Fatalf("fleettest: %v", err)
		return nil
	}
	f := &Fleet{Broker: b}
	for i := range count {
		facts := agent.SimulatedFacts(i, Prefix, base, vs)
		f.Facts = append(f.Facts, facts)
		f.Identities = append(f.Identities, facts["identity"].(string))
	}

	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	done := make(chan error, 1)
	sim := agent.Simulation{
		Count:  count,
		Prefix: Prefix,
		Facts:  base,
		Vary:   vs,
		Config: cfg,
		Connect: func(ctx context.Context, name string) (*nats.Conn, error) {
			return natsconn.Connect(ctx, natsconn.Options{Servers: url, Name: name})
		},
		Engine:  newEngine(reg, o.Log),
		Log:     o.Log,
		Version: "fleettest",
		Ready:   func() { close(ready) },
	}
	go func() { done <- sim.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("fleettest: agents: %v", err)
			}
		case <-time.After(startTimeout):
			t.Fatalf("fleettest: agents did not stop within %s", startTimeout)
		}
	})
	select {
	case <-ready:
	case err := <-done:
		done <- err // leave it for the cleanup
		t.Fatalf("fleettest: agents stopped before serving: %v", err)
	case <-time.After(startTimeout):
		t.Fatalf("fleettest: agents did not serve within %s", startTimeout)
	}
	// An agent serves even when its first registry write failed (it
	// retries a second later): under load, discovery from the registry
	// right after start could miss it. Wait until every entry is there.
	if err := WaitRegistered(url, f.Identities); err != nil {
		t.Fatalf("fleettest: %v", err)
	}
	return f
}

// WaitRegistered waits until the node registry at url holds every identity,
// or fails naming how many are missing after the start timeout. An agent is
// ready once subscribed; its registry entry may land a moment later.
func WaitRegistered(url string, identities []string) error {
	nc, err := nats.Connect(url)
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	missing := len(identities)
	for {
		if kv, err := jsstore.LookupRegistry(ctx, js); err == nil {
			missing = 0
			for _, id := range identities {
				if _, err := kv.Get(ctx, id); err != nil {
					missing++
				}
			}
			if missing == 0 {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d of %d agents are not in the node registry after %s", missing, len(identities), startTimeout)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// newEngine is the agents' engine, logging to log when set.
func newEngine(reg *resources.Registry, log *slog.Logger) *engine.Engine {
	if log == nil {
		return engine.New(reg, engine.WithHealthRunner(providers.HealthRunner(runner.Exec{})))
	}
	return engine.New(reg, engine.WithLogger(log), engine.WithHealthRunner(providers.HealthRunner(runner.Exec{})))
}

// Connect opens a client connection to the fleet's broker, closed at t's
// cleanup.
func (f *Fleet) Connect(t brokertest.TB) *nats.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	nc, err := natsconn.Connect(ctx, natsconn.Options{Servers: f.URL(), Name: "fleettest-client"})
	if err != nil {
		t.Fatalf("fleettest: %v", err)
		return nil
	}
	t.Cleanup(nc.Close)
	return nc
}

// provision creates the history stream and the node registry.
func provision(url string) error {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	nc, err := natsconn.Connect(ctx, natsconn.Options{Servers: url, Name: "fleettest-provision"})
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	if _, err := jsstore.EnsureHistory(ctx, js, jsstore.HistoryConfig{}); err != nil {
		return err
	}
	if _, err = jsstore.EnsureRegistry(ctx, js, jsstore.RegistryConfig{}); err != nil {
		return err
	}
	_, err = jsstore.EnsureAssignments(ctx, js, jsstore.AssignmentsConfig{})
	return err
}
