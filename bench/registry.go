package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/ccm-fleet/ccm/agent"
	"github.com/ccm-fleet/ccm/orchestrator"
	"github.com/ccm-fleet/ccm/protocol"
)

// registryTTL keeps the bench's registry entries for the whole step.
const registryTTL = time.Hour

// registryFacts are the flat facts of every bench registry entry, like a
// real agent's.
var registryFacts = map[string]any{
	"os": "debian", "platform": "debian", "platform_version": "12.7", "kernel": "linux",
	"arch": "amd64", "cpus": 4, "memory_mb": 8192, "virtualization": "kvm",
}

// registry times discovery from node registries of RegistrySizes entries
// (no agents: the entries are written directly).
func (b *bencher) registry(ctx context.Context) ([]Row, error) {
	s, _, err := b.openSite(ctx, "registry", registryTTL, 1)
	if err != nil {
		return nil, err
	}
	defer s.stop()
	client := orchestrator.New(s.nc)
	vary := []agent.Vary{{Key: "role", Values: []string{"web", "db", "cache"}}}
	sizes := slices.Sorted(slices.Values(b.cfg.RegistrySizes))
	var rows []Row
	have := 0
	for _, n := range sizes {
		b.logf("registry: %d entries", n)
		if _, err := b.writeRegistry(s, have, n, vary); err != nil {
			return rows, err
		}
		select {
		case <-s.js.PublishAsyncComplete():
		case <-time.After(deadlinesFor(n).start):
			return rows, fmt.Errorf("registry: writing %d entries timed out", n)
		}
		have = n
		row := Row{Name: "registry-discovery", Agents: n, Discovery: string(orchestrator.DiscoveryRegistry),
			Note: "discover every entry of the node registry (library call)"}
		var got samples
		cpu0 := selfCPU()
		for i := range b.cfg.Rounds + 1 {
			start := time.Now()
			nodes, err := client.Discover(ctx, orchestrator.DiscoverOptions{Mode: orchestrator.DiscoveryRegistry, Timeout: deadlinesFor(n).reply})
			d := time.Since(start)
			if err != nil {
				return rows, fmt.Errorf("registry discovery: %w", err)
			}
			if len(nodes) != n {
				row.Errors++
				row.Note = fmt.Sprintf("found %d of %d entries", len(nodes), n)
				continue
			}
			if i > 0 {
				got = append(got, d)
			}
		}
		got.stats(&row)
		row.BenchCPUSeconds = round3((selfCPU() - cpu0).Seconds() / float64(b.cfg.Rounds+1))
		rows = append(rows, row)
	}
	return rows, nil
}

// writeRegistry publishes (asynchronously) the registry entries of
// simulated nodes from to to, like the agents' own, and returns their
// identities.
func (b *bencher) writeRegistry(s *site, from, to int, vary []agent.Vary) ([]string, error) {
	now := time.Now().UTC()
	var ids []string
	for i := from; i < to; i++ {
		facts := agent.SimulatedFacts(i, "node", registryFacts, vary)
		rec := protocol.NodeRecord{Protocol: protocol.NodeProtocol, Identity: facts["identity"].(string),
			Facts: protocol.ScalarFacts(facts), Version: "bench", Started: now, LastSeen: now}
		ids = append(ids, rec.Identity)
		if err := b.publishJSON(s, "$KV."+protocol.NodesBucket+"."+rec.Identity, &rec); err != nil {
			return ids, err
		}
	}
	return ids, nil
}

// publishJSON publishes v asynchronously on subject through JetStream.
func (b *bencher) publishJSON(s *site, subject string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = s.js.PublishAsync(subject, data)
	return err
}
