package fleettest

import (
	"context"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ccm-fleet/ccm/agent"
	"github.com/ccm-fleet/ccm/broker"
	"github.com/ccm-fleet/ccm/broker/brokertest"
	"github.com/ccm-fleet/ccm/natsconn"
	"github.com/ccm-fleet/ccm/providers"
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

// Start starts a broker and count simulated agents whose facts are base
// plus one value of each vary ("key=v1,v2", see agent.ParseVary), and waits
// until all of them serve. The agents and the broker stop at t's cleanup.
func Start(t brokertest.TB, count int, base map[string]any, vary ...string) *Fleet {
	t.Helper()
	b := brokertest.Start(t)
	url := b.ClientURL()

	var vs []agent.Vary
	for _, v := range vary {
		pv, err := agent.ParseVary(v)
		if err != nil {
			t.Fatalf("fleettest: %v", err)
			return nil
		}
		vs = append(vs, pv)
	}
	reg, err := providers.Builtin(providers.Options{})
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
		Config: agent.Config{ShutdownTimeout: 5 * time.Second},
		Connect: func(ctx context.Context, name string) (*nats.Conn, error) {
			return natsconn.Connect(ctx, natsconn.Options{Servers: url, Name: name})
		},
		Engine:  engine.New(reg),
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
	return f
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
