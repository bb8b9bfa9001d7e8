package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources/engine"
)

// Vary gives a fact a different value per simulated agent.
type Vary struct {
	Key    string
	Values []string
}

// ParseVary parses "key=v1,v2,...".
func ParseVary(s string) (Vary, error) {
	k, vals, ok := strings.Cut(s, "=")
	if !ok || k == "" || vals == "" {
		return Vary{}, fmt.Errorf("%w: --vary %q must look like key=value1,value2", ErrConfig, s)
	}
	v := Vary{Key: k}
	for _, x := range strings.Split(vals, ",") {
		if x = strings.TrimSpace(x); x != "" {
			v.Values = append(v.Values, x)
		}
	}
	if len(v.Values) == 0 {
		return Vary{}, fmt.Errorf("%w: --vary %q has no values", ErrConfig, s)
	}
	if k == protocol.SiteFact {
		for _, x := range v.Values {
			if err := protocol.ValidateSite(x); err != nil {
				return Vary{}, fmt.Errorf("%w: --vary %q: %w", ErrConfig, s, err)
			}
		}
	}
	return v, nil
}

// SimulatedIdentity is the identity of simulated agent i: prefix-0001 …
func SimulatedIdentity(prefix string, i int) string { return fmt.Sprintf("%s-%04d", prefix, i+1) }

// SimulatedFacts returns the facts of simulated agent i: base, then the
// varied facts (mixed radix, so every combination appears once the count
// allows), then identity and hostname.
func SimulatedFacts(i int, prefix string, base map[string]any, vary []Vary) map[string]any {
	f := make(map[string]any, len(base)+len(vary)+2)
	for k, v := range base {
		f[k] = v
	}
	n := i
	for _, v := range vary {
		f[v.Key] = v.Values[n%len(v.Values)]
		n /= len(v.Values)
	}
	id := SimulatedIdentity(prefix, i)
	f["identity"] = id
	f["hostname"] = id
	return f
}

// SimulatedStateDir is the state directory of the simulated agent identity
// below base (DefaultStateDir when empty).
func SimulatedStateDir(base, identity string) string {
	if base == "" {
		base = DefaultStateDir
	}
	return filepath.Join(base, identity)
}

// Simulation runs Count agents in this process, each with its own NATS
// connection, identity and facts, sharing one engine.
type Simulation struct {
	Count int
	// First is the index of the first agent (0: PREFIX-0001), so that
	// several simulations can make up one fleet.
	First  int
	Prefix string
	// Facts are every simulated agent's base facts.
	Facts map[string]any
	Vary  []Vary
	// Config is the base agent configuration; Identity is set per agent,
	// and each agent's state directory (its history spool) is
	// <Config.StateDir>/<identity>.
	Config Config
	// Connect opens one agent's connection; name is its identity.
	Connect func(ctx context.Context, name string) (*nats.Conn, error)
	Engine  *engine.Engine
	Log     *slog.Logger
	Version string
	// Ready, when set, is called once every agent is serving.
	Ready func()
}

// MaxSimulated bounds Count.
const MaxSimulated = 20000

// maxStarting is how many simulated agents of one process start at once:
// the rest wait until one of them serves. Thousands starting together
// (registry writes, stream lookups, subscriptions) time out against a
// busy broker and retry, which only keeps it busy.
const maxStarting = 256

// withDefaults checks s's bounds and fills in its prefix and logger.
func (s Simulation) withDefaults() (Simulation, error) {
	if s.Count < 1 || s.Count > MaxSimulated {
		return s, fmt.Errorf("%w: count %d must be between 1 and %d", ErrConfig, s.Count, MaxSimulated)
	}
	if s.First < 0 || s.First > 999999 {
		return s, fmt.Errorf("%w: first agent %d must be between 1 and 1000000", ErrConfig, s.First+1)
	}
	if s.Prefix == "" {
		s.Prefix = "sim"
	}
	if s.Log == nil {
		s.Log = slog.New(slog.DiscardHandler)
	}
	return s, nil
}

// Run starts every agent, serves until ctx is done, then stops them all and
// closes their connections.
func (s Simulation) Run(ctx context.Context) error {
	s, err := s.withDefaults()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	var ready sync.WaitGroup
	readyOnce := make([]sync.Once, s.Count)
	starting := make(chan struct{}, maxStarting)
	started := func() { <-starting; ready.Done() }
	agents, conns, err := s.newAgents(ctx, &ready, readyOnce, started)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	if err != nil {
		return err
	}

	var wg sync.WaitGroup
	errs := make([]error, len(agents))
	for i, a := range agents {
		select {
		case starting <- struct{}{}:
		case <-ctx.Done():
			readyOnce[i].Do(ready.Done)
			continue
		}
		wg.Go(func() {
			errs[i] = a.Run(ctx)
			readyOnce[i].Do(started) // an agent that failed to start is done waiting for
			if errs[i] != nil {
				cancel()
			}
		})
	}
	allReady := make(chan struct{})
	go func() { ready.Wait(); close(allReady) }()
	select {
	case <-allReady:
		if s.Ready != nil {
			s.Ready()
		}
	case <-ctx.Done():
	}
	wg.Wait()
	return errors.Join(errs...)
}

// newAgents connects and makes every agent, each counted in ready until
// its readyOnce is done (started, once it serves); it returns the
// connections opened so far even when one failed, for the caller to close.
func (s Simulation) newAgents(ctx context.Context, ready *sync.WaitGroup, readyOnce []sync.Once, started func()) ([]*Agent, []*nats.Conn, error) {
	// What is the same for every agent is shared: the engine, and the
	// cache of the signers' expanded keys (about 1.5 KiB a key).
	verifier := protocol.NewVerifier(signerKeys)
	var agents []*Agent
	var conns []*nats.Conn
	for i := range s.Count {
		facts := SimulatedFacts(s.First+i, s.Prefix, s.Facts, s.Vary)
		cfg := s.Config
		cfg.Identity = facts["identity"].(string)
		cfg.StateDir = SimulatedStateDir(s.Config.StateDir, cfg.Identity)
		nc, err := s.Connect(ctx, cfg.Identity)
		if err != nil {
			return nil, conns, fmt.Errorf("simulated agent %s: %w", cfg.Identity, err)
		}
		conns = append(conns, nc)
		ready.Add(1)
		a, err := New(cfg, nc, s.Engine, facts, WithLogger(s.Log), WithVersion(s.Version), withVerifier(verifier),
			WithReady(func() { readyOnce[i].Do(started) }))
		if err != nil {
			return nil, conns, err
		}
		agents = append(agents, a)
	}
	return agents, conns, nil
}
