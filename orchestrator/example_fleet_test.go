package orchestrator_test

import (
	"context"
	"fmt"
	"os"

	"github.com/nats-io/nats.go"

	"github.com/ccm-fleet/ccm/agent"
	"github.com/ccm-fleet/ccm/broker"
	"github.com/ccm-fleet/ccm/providers"
	"github.com/ccm-fleet/ccm/resources/engine"
)

// exampleFleet starts an embedded broker and four simulated agents (os
// debian and rhel, role web and db) for the examples, and returns the
// broker's URL and a function that stops everything.
func exampleFleet() (string, func()) {
	b, err := broker.New(broker.Config{Listen: "127.0.0.1:-1"})
	if err != nil {
		panic(err)
	}
	if err := b.Start(context.Background()); err != nil {
		panic(err)
	}
	url := b.ClientURL()
	reg, err := providers.Builtin(providers.Options{})
	if err != nil {
		panic(err)
	}
	osv, _ := agent.ParseVary("os=debian,rhel")
	role, _ := agent.ParseVary("role=web,db")
	ctx, cancel := context.WithCancel(context.Background())
	ready, done := make(chan struct{}), make(chan error, 1)
	state, err := os.MkdirTemp("", "ccm-example-")
	if err != nil {
		panic(err)
	}
	sim := agent.Simulation{
		Count: 4, Prefix: "web", Vary: []agent.Vary{osv, role}, Engine: engine.New(reg),
		// Unsigned requests, for the example; see docs/security.md.
		Config:  agent.Config{StateDir: state, Insecure: true},
		Connect: func(_ context.Context, name string) (*nats.Conn, error) { return nats.Connect(url, nats.Name(name)) },
		Ready:   func() { close(ready) },
	}
	go func() { done <- sim.Run(ctx) }()
	select {
	case <-ready:
	case err := <-done:
		panic(fmt.Sprint("agents: ", err))
	}
	return url, func() {
		cancel()
		<-done
		_ = b.Shutdown(context.Background())
		_ = os.RemoveAll(state)
	}
}
