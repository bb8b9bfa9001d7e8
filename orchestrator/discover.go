package orchestrator

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ccm-fleet/ccm/protocol"
)

// Discovery defaults.
const (
	// DefaultDiscoveryTimeout is the longest a discovery round lasts.
	DefaultDiscoveryTimeout = 2 * time.Second
	// DefaultDiscoveryQuiet ends a discovery round once no announcement
	// arrived for this long.
	DefaultDiscoveryQuiet = 300 * time.Millisecond
	// DiscoveryFirstWait is the least a broadcast round waits for its
	// first announcement: on a busy machine or a large fleet the first
	// one can take longer than the quiet window (at 20,000 simulated
	// agents on 2 cores it did, and rounds found nobody).
	DiscoveryFirstWait = time.Second
)

// MaxDiscovered bounds how many hosts one discovery round keeps.
const MaxDiscovered = protocol.MaxExpected

// DiscoverOptions selects the hosts to find and bounds the search.
type DiscoverOptions struct {
	// Filter selects hosts; nil finds every host.
	Filter *protocol.Filter
	// Timeout is the upper bound of the round; default
	// DefaultDiscoveryTimeout. The round usually ends earlier, see Quiet.
	Timeout time.Duration
	// Quiet ends the round once no announcement arrived for this long,
	// and none received is still being checked; counted from the request
	// being sent, but the first announcement is waited for at least
	// DiscoveryFirstWait; default DefaultDiscoveryQuiet.
	Quiet time.Duration
	// Mode chooses between the node registry and a broadcast round;
	// default DiscoveryAuto.
	Mode DiscoveryMode
	// Facts are nested facts (dotted paths) to report in each Node's
	// Facts under the path as written, at most
	// protocol.MaxDiscoveryFactPaths. The registry and announcements keep
	// top-level scalar facts only, so these are asked of the agents: auto
	// mode broadcasts, registry mode refuses them.
	Facts []string
}

// Node is one host that answered discovery.
type Node struct {
	Identity string         `json:"identity"`
	Facts    map[string]any `json:"facts"`
	Version  string         `json:"version,omitempty"`
	// PublicKey is the key the host signs its replies with, when it
	// announced one (in the registry, or in a signed discovery reply).
	PublicKey string `json:"public_key,omitempty"`
}

func (o DiscoverOptions) normalize() (DiscoverOptions, error) {
	switch {
	case o.Timeout < 0:
		return o, fmt.Errorf("%w: discovery timeout %s is negative", ErrInvalid, o.Timeout)
	case o.Quiet < 0:
		return o, fmt.Errorf("%w: discovery quiet window %s is negative", ErrInvalid, o.Quiet)
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultDiscoveryTimeout
	}
	if o.Quiet == 0 {
		o.Quiet = DefaultDiscoveryQuiet
	}
	if err := o.Filter.Compile(); err != nil {
		return o, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if err := protocol.CheckDiscoveryFacts(o.Facts); err != nil {
		return o, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	mode, err := ParseDiscoveryMode(string(o.Mode))
	if err != nil {
		return o, err
	}
	o.Mode = mode
	return o, nil
}

// Discover finds the hosts the filter selects, sorted by identity, from the
// node registry or by a broadcast round as opts.Mode says (see
// DiscoveryMode).
//
// From the registry, every entry is read and filtered locally with the
// filter code the agents use, on the flat facts the entries carry.
//
// A broadcast round sends a discovery request on the narrowest discovery
// subject for the filter and collects announcements until none arrived for
// the quiet window or the timeout passed, whichever is first. Each
// announcement is decoded strictly and its facts are checked against the
// filter again (terms on nested facts, which announcements do not carry,
// are left to the agent); hosts are deduplicated by identity.
//
// It returns an error only for invalid options, a failure to send or read
// the registry, or ctx ending; finding nobody is an empty list.
func (c *Client) Discover(ctx context.Context, opts DiscoverOptions) ([]Node, error) {
	d, err := c.DiscoverHosts(ctx, opts)
	if err != nil {
		return nil, err
	}
	return d.Nodes, nil
}

// DiscoveryResult is what DiscoverHosts found and how.
type DiscoveryResult struct {
	// Nodes are the hosts found, sorted by identity.
	Nodes []Node `json:"nodes"`
	// Source is how they were found: protocol.DiscoveryRegistry or
	// protocol.DiscoveryBroadcast.
	Source string `json:"source"`
	// Fallback says why DiscoveryAuto broadcast instead of answering from
	// the node registry alone: the registry could not be read, had no
	// entry the filter selects, or was stale (its newest entry older than
	// half its TTL). Empty when it did not fall back (or the mode was not
	// auto, or the filter needed nested facts).
	Fallback string `json:"fallback,omitempty"`
}

// DiscoverHosts is Discover that also says how the hosts were found and
// why DiscoveryAuto fell back to a broadcast, for callers that report it.
func (c *Client) DiscoverHosts(ctx context.Context, opts DiscoverOptions) (*DiscoveryResult, error) {
	opts, err := opts.normalize()
	if err != nil {
		return nil, err
	}
	nodes, source, fallback, err := c.discoverFrom(ctx, newRequestID(), opts)
	if err != nil {
		return nil, err
	}
	return &DiscoveryResult{Nodes: nodes, Source: source, Fallback: fallback}, nil
}

func (c *Client) discover(ctx context.Context, id string, opts DiscoverOptions) ([]Node, error) {
	dr := protocol.NewDiscoveryRequest(id, opts.Filter)
	dr.Facts = opts.Facts
	data, err := json.Marshal(dr)
	if err != nil {
		return nil, fmt.Errorf("discovery: %w", err)
	}
	in, err := openInbox(c.nc, c.hostKeys)
	if err != nil {
		return nil, fmt.Errorf("discovery: %w", err)
	}
	defer in.close()

	for _, subject := range c.discoverySubjects(opts.Filter) {
		if err := in.publish(c.nc, subject, data, nil); err != nil {
			return nil, fmt.Errorf("discovery: %w", err)
		}
	}
	deadline := time.NewTimer(opts.Timeout)
	defer deadline.Stop()
	quiet := time.NewTimer(max(opts.Quiet, DiscoveryFirstWait))
	defer quiet.Stop()

	local := localFilter(opts.Filter)
	found := map[string]Node{}
	for {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("discovery: %w", ctx.Err())
		case <-deadline.C:
			return sortedNodes(found), nil
		case <-quiet.C:
			// Replies received but not yet verified or taken, or still
			// unread after this process waited for a core, are not quiet.
			if !in.drained(c.nc, opts.Quiet) {
				quiet.Reset(opts.Quiet)
				continue
			}
			return sortedNodes(found), nil
		case m := <-in.ch:
			quiet.Reset(opts.Quiet)
			r, err := protocol.DecodeDiscoveryReply(m.data, protocol.Limits{})
			if err != nil {
				c.log.Warn("ignored a malformed discovery reply", "error", err)
				continue
			}
			if r.RequestID != id {
				c.log.Warn("ignored a discovery reply to another request", "identity", r.Identity, "request", r.RequestID)
				continue
			}
			facts := r.Facts
			if facts == nil {
				facts = map[string]any{}
			}
			facts["identity"] = r.Identity
			if !local.Match(facts) {
				c.log.Warn("ignored a discovery reply whose facts do not match the filter", "identity", r.Identity)
				continue
			}
			if _, dup := found[r.Identity]; !dup && len(found) < MaxDiscovered {
				n := Node{Identity: r.Identity, Facts: facts, Version: r.Version}
				// A key counts only when the announcement is signed with it.
				if r.PublicKey != "" && m.signed && m.signer == r.PublicKey {
					n.PublicKey = r.PublicKey
				}
				found[r.Identity] = n
			}
		}
	}
}

// localFilter is the part of f that announced facts can answer: the host
// terms, the terms on top-level facts, and the select expression when it
// has no term on a nested fact. Terms on nested facts (dotted keys) are not
// announced and stay the agent's to check (a select expression is one
// judgement: a part of it cannot be checked alone).
func localFilter(f *protocol.Filter) *protocol.Filter {
	if f == nil {
		return nil
	}
	local := &protocol.Filter{Hosts: f.Hosts}
	for _, t := range f.Where {
		if !strings.Contains(t.Key, ".") {
			local.Where = append(local.Where, t)
		}
	}
	if f.Select != "" && len(nestedTerms(&protocol.Filter{Select: f.Select})) == 0 {
		local.Select = f.Select
	}
	_ = local.Compile() // parts of a compiled filter compile
	return local
}

func sortedNodes(found map[string]Node) []Node {
	out := make([]Node, 0, len(found))
	for _, n := range found {
		out = append(out, n)
	}
	slices.SortFunc(out, func(a, b Node) int { return strings.Compare(a.Identity, b.Identity) })
	return out
}
