package orchestrator

import (
	"context"
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
	// DiscoveryAuto reads the node registry when the filter has no term on
	// a nested fact (the registry keeps flat facts only), and broadcasts
	// otherwise. It also broadcasts, and says why, when the registry
	// cannot be read, has no entry the filter selects, or is stale (see
	// DiscoveryResult.Fallback); the hosts are then those that answered
	// plus the registry's selected entries.
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
// source, protocol.DiscoveryRegistry or protocol.DiscoveryBroadcast, and,
// when DiscoveryAuto did not answer from the registry alone, why (see
// DiscoveryResult.Fallback).
func (c *Client) discoverFrom(ctx context.Context, id string, opts DiscoverOptions) ([]Node, string, string, error) {
	nested := append(nestedTerms(opts.Filter), opts.Facts...)
	switch opts.Mode {
	case DiscoveryBroadcast:
	case DiscoveryRegistry:
		if len(nested) > 0 {
			return nil, "", "", fmt.Errorf("%w: the registry keeps flat facts only, so %s needs --discovery broadcast (or auto)", ErrInvalid, strings.Join(nested, ", "))
		}
		view, err := c.registryNodes(ctx, opts)
		if err != nil {
			return nil, "", "", fmt.Errorf("discovery: %w", err)
		}
		return view.nodes, protocol.DiscoveryRegistry, "", nil
	default:
		if len(nested) > 0 {
			break
		}
		view, err := c.registryNodes(ctx, opts)
		if ctx.Err() != nil {
			return nil, "", "", fmt.Errorf("discovery: %w", ctx.Err())
		}
		fallback := view.fallback(err, c.now())
		if fallback == "" {
			return view.nodes, protocol.DiscoveryRegistry, "", nil
		}
		c.log.Debug("discovering by broadcast instead of the node registry", "reason", fallback)
		nodes, err := c.discover(ctx, id, opts)
		if err != nil {
			return nil, "", "", err
		}
		return mergeNodes(nodes, view.nodes), protocol.DiscoveryBroadcast, fallback, nil
	}
	nodes, err := c.discover(ctx, id, opts)
	return nodes, protocol.DiscoveryBroadcast, "", err
}

// registryView is what one read of the node registry found.
type registryView struct {
	// nodes are the entries the filter selects, sorted by identity.
	nodes []Node
	// entries counts every live entry, selected or not.
	entries int
	// newest is the most recent last_seen of any entry.
	newest time.Time
	// ttl is the bucket's entry lifetime; 0 when unknown.
	ttl time.Duration
}

// fallback says why DiscoveryAuto must not answer from this registry read
// alone, or "" when it may:
//   - the read failed (no bucket, JetStream unavailable or too slow);
//   - no entry matches the filter: entries expire when agents cannot
//     refresh them (a full store refuses their writes), so an empty answer
//     is checked by a broadcast before it becomes "no host matched";
//   - the registry is stale: its newest entry was refreshed longer ago than
//     half the bucket's TTL (agents refresh every heartbeat, and their
//     default TTL is three heartbeats, so a healthy fleet always has an
//     entry younger than that), which means agents' writes are failing.
func (v registryView) fallback(err error, now time.Time) string {
	switch {
	case err != nil:
		return fmt.Sprintf("the node registry could not be read (%v)", err)
	case len(v.nodes) == 0 && v.entries == 0:
		return "the node registry is empty"
	case len(v.nodes) == 0:
		return fmt.Sprintf("no node registry entry matches the filter (of %d entries)", v.entries)
	}
	if limit := staleAfter(v.ttl); limit > 0 && now.Sub(v.newest) > limit {
		return fmt.Sprintf("the node registry is stale: its newest entry was refreshed %s ago, more than half its %s TTL", now.Sub(v.newest).Round(time.Second), v.ttl)
	}
	return ""
}

// staleAfter is how old the registry's newest entry may be before the
// registry counts as stale: half the bucket's TTL, 0 (never) when the TTL
// is unknown.
func staleAfter(ttl time.Duration) time.Duration { return ttl / 2 }

// mergeNodes is the broadcast's nodes plus the registry's nodes that did
// not answer it (they are then expected and, when dead, reported as no
// reply rather than dropped), sorted by identity. A node the broadcast
// found keeps the registry's public key when its announcement had none.
func mergeNodes(broadcast, registry []Node) []Node {
	found := make(map[string]Node, len(broadcast)+len(registry))
	for _, n := range registry {
		found[n.Identity] = n
	}
	for _, n := range broadcast {
		if r, ok := found[n.Identity]; ok && n.PublicKey == "" {
			n.PublicKey = r.PublicKey
		}
		found[n.Identity] = n
	}
	return sortedNodes(found)
}

// registryNodes reads the registry and keeps the entries the filter
// selects, sorted by identity. Finding the bucket is bounded by the
// discovery timeout (JetStream not answering in time means no registry);
// reading it, by registryReadTimeout at least, as a large registry on a
// busy server may take longer than a broadcast round would.
func (c *Client) registryNodes(ctx context.Context, opts DiscoverOptions) (registryView, error) {
	var view registryView
	if c.js == nil {
		return view, jsstore.ErrNoRegistry
	}
	lctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	kv, err := jsstore.LookupRegistry(lctx, c.js)
	cancel()
	if err != nil {
		return view, err
	}
	rctx, cancel := context.WithTimeout(ctx, max(opts.Timeout, registryReadTimeout))
	defer cancel()
	recs, malformed, err := jsstore.ListNodes(rctx, c.js, kv)
	if err != nil {
		return view, err
	}
	if malformed > 0 {
		c.log.Warn("ignored malformed node registry entries", "entries", malformed)
	}
	if st, err := kv.Status(rctx); err == nil {
		view.ttl = st.TTL()
	} else {
		c.log.Debug("could not read the node registry's TTL", "error", err)
	}
	view.entries = len(recs)
	found := make(map[string]Node, len(recs))
	for _, r := range recs {
		if r.LastSeen.After(view.newest) {
			view.newest = r.LastSeen
		}
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
	view.nodes = sortedNodes(found)
	return view, nil
}

// registryReadTimeout is the least time allowed to read the registry once
// its bucket was found.
const registryReadTimeout = 30 * time.Second

// nestedTerms lists the filter's terms on nested facts (dotted keys),
// its select expression's included.
func nestedTerms(f *protocol.Filter) []string {
	var out []string
	for _, t := range f.Terms() {
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
		recs, _, err := jsstore.ListNodes(ctx, c.js, kv)
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
