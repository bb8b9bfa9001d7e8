package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ccm-fleet/ccm/jsstore"
	"github.com/ccm-fleet/ccm/protocol"
)

// DiscoveryMode chooses how Discover and Run find hosts.
type DiscoveryMode string

// Discovery modes.
const (
	// DiscoveryAuto reads the node registry when its bucket exists and the
	// filter has no term on a nested fact (the registry keeps flat facts
	// only), and broadcasts otherwise.
	DiscoveryAuto DiscoveryMode = "auto"
	// DiscoveryRegistry reads the node registry; it is an error when the
	// bucket does not exist or the filter needs nested facts.
	DiscoveryRegistry DiscoveryMode = "registry"
	// DiscoveryBroadcast asks the agents with a broadcast round.
	DiscoveryBroadcast DiscoveryMode = "broadcast"
)

// ParseDiscoveryMode reads "auto", "registry" or "broadcast"; empty is
// DiscoveryAuto. Errors wrap ErrInvalid.
func ParseDiscoveryMode(s string) (DiscoveryMode, error) {
	switch m := DiscoveryMode(s); m {
	case "":
		return DiscoveryAuto, nil
	case DiscoveryAuto, DiscoveryRegistry, DiscoveryBroadcast:
		return m, nil
	}
	return "", fmt.Errorf("%w: discovery %q: use auto, registry or broadcast", ErrInvalid, s)
}

// discoverFrom finds hosts as opts.Mode says and returns them with their
// source, protocol.DiscoveryRegistry or protocol.DiscoveryBroadcast.
func (c *Client) discoverFrom(ctx context.Context, id string, opts DiscoverOptions) ([]Node, string, error) {
	nested := nestedTerms(opts.Filter)
	switch opts.Mode {
	case DiscoveryBroadcast:
	case DiscoveryRegistry:
		if len(nested) > 0 {
			return nil, "", fmt.Errorf("%w: the registry keeps flat facts only, so %s needs --discovery broadcast (or auto)", ErrInvalid, strings.Join(nested, ", "))
		}
		nodes, err := c.registryNodes(ctx, opts)
		if err != nil {
			return nil, "", fmt.Errorf("discovery: %w", err)
		}
		return nodes, protocol.DiscoveryRegistry, nil
	default:
		if len(nested) == 0 {
			nodes, err := c.registryNodes(ctx, opts)
			switch {
			case err == nil:
				return nodes, protocol.DiscoveryRegistry, nil
			case !errors.Is(err, jsstore.ErrNoRegistry):
				return nil, "", fmt.Errorf("discovery: %w", err)
			}
			c.log.Debug("no node registry, discovering by broadcast", "error", err)
		}
	}
	nodes, err := c.discover(ctx, id, opts)
	return nodes, protocol.DiscoveryBroadcast, err
}

// registryNodes reads the registry and keeps the entries the filter
// selects, sorted by identity. Finding the bucket is bounded by the
// discovery timeout (JetStream not answering in time means no registry);
// reading it, by registryReadTimeout at least, as a large registry on a
// busy server may take longer than a broadcast round would.
func (c *Client) registryNodes(ctx context.Context, opts DiscoverOptions) ([]Node, error) {
	if c.js == nil {
		return nil, jsstore.ErrNoRegistry
	}
	lctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	kv, err := jsstore.LookupRegistry(lctx, c.js)
	cancel()
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithTimeout(ctx, max(opts.Timeout, registryReadTimeout))
	defer cancel()
	recs, malformed, err := jsstore.ListNodes(rctx, kv)
	if err != nil {
		return nil, err
	}
	if malformed > 0 {
		c.log.Warn("ignored malformed node registry entries", "entries", malformed)
	}
	found := make(map[string]Node, len(recs))
	for _, r := range recs {
		facts := r.Facts
		if facts == nil {
			facts = map[string]any{}
		}
		facts["identity"] = r.Identity
		if !opts.Filter.Match(facts) {
			continue
		}
		if len(found) < MaxDiscovered {
			found[r.Identity] = Node{Identity: r.Identity, Facts: facts, Version: r.Version, PublicKey: r.PublicKey}
		}
	}
	return sortedNodes(found), nil
}

// registryReadTimeout is the least time allowed to read the registry once
// its bucket was found.
const registryReadTimeout = 30 * time.Second

// nestedTerms lists the filter's terms on nested facts (dotted keys).
func nestedTerms(f *protocol.Filter) []string {
	if f == nil {
		return nil
	}
	var out []string
	for _, t := range f.Where {
		if strings.Contains(t.Key, ".") {
			out = append(out, t.String())
		}
	}
	return out
}

// maxKeyLookups is the most explicit hosts whose registry entries are read
// one by one for their keys; above it the whole registry is listed.
const maxKeyLookups = 100

// registryKeys returns the public keys the node registry holds for hosts
// (an explicit expected set), within timeout. No registry, or an error,
// gives no keys: the replies are then counted unverified.
func (c *Client) registryKeys(ctx context.Context, hosts []string, timeout time.Duration) map[string]string {
	keys := map[string]string{}
	if c.js == nil || len(hosts) == 0 {
		return keys
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	kv, err := jsstore.LookupRegistry(ctx, c.js)
	if err != nil {
		c.log.Debug("no node registry to read keys from", "error", err)
		return keys
	}
	if len(hosts) > maxKeyLookups {
		recs, _, err := jsstore.ListNodes(ctx, kv)
		if err != nil {
			c.log.Debug("could not read keys from the node registry", "error", err)
			return keys
		}
		want := make(map[string]bool, len(hosts))
		for _, h := range hosts {
			want[h] = true
		}
		for _, r := range recs {
			if want[r.Identity] && r.PublicKey != "" {
				keys[r.Identity] = r.PublicKey
			}
		}
		return keys
	}
	for _, h := range hosts {
		e, err := kv.Get(ctx, h)
		if err != nil {
			continue
		}
		r, err := protocol.DecodeNodeRecord(e.Value(), protocol.Limits{})
		if err == nil && r.Identity == h && r.PublicKey != "" {
			keys[h] = r.PublicKey
		}
	}
	return keys
}
