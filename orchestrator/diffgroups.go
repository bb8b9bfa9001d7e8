package orchestrator

import (
	"cmp"
	"context"
	"encoding/json"
	"regexp"
	"slices"
	"strings"

	"github.com/ccm-fleet/ccm/protocol"
)

// DiffGroup is a set of hosts whose resource had the same diff once each
// host's own identity and the values of the facts the request's templates
// read are replaced by placeholders (HostPlaceholder, "<facts.KEY>").
type DiffGroup struct {
	// Resource is the resource reference, type#name, with the identity
	// replaced as in Diff.
	Resource string `json:"resource"`
	// Outcome is the event outcome the diff comes with: "would_change" or
	// "changed" (also "failed" when a change was attempted and failed).
	Outcome string `json:"outcome"`
	// Diff is the shared diff, with placeholders.
	Diff *protocol.Diff `json:"diff"`
	// Hosts are the identities in the group, sorted.
	Hosts []string `json:"hosts"`
	// Count is len(Hosts).
	Count int `json:"count"`
}

// factRefRe finds the facts a template reads: facts.KEY or
// lookup('facts.KEY'), dotted paths included.
var factRefRe = regexp.MustCompile(`facts\.([A-Za-z0-9_]+(?:\.[A-Za-z0-9_]+)*)`)

// TemplateFacts returns the fact paths (such as "hostname" or
// "host.info.os") that the texts name as facts.KEY, sorted and unique: the
// facts a request's templates may read.
func TemplateFacts(texts ...[]byte) []string {
	seen := map[string]bool{}
	for _, t := range texts {
		for _, m := range factRefRe.FindAllSubmatch(t, -1) {
			seen[string(m[1])] = true
		}
	}
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// DiffGroups gathers the diffs of the result's events into groups of hosts
// whose diff is the same once each host's identity and the values of the
// facts in r.TemplateFacts (as discovery saw them, or LoadFacts read them
// for a result from history) are replaced by placeholders. Unlike the
// message groups, which replace every string fact, only the facts the
// request's templates name are replaced: a diff shows file content, where
// a fact value (a role "db") may well appear by chance. Groups are sorted
// by resource, then largest first, then by first host. Events without a
// diff are left out.
func DiffGroups(r *Result) []DiffGroup {
	type key struct{ ref, outcome, diff string }
	groups := map[key]*DiffGroup{}
	for _, h := range r.Hosts {
		sh := newTemplateShaper(h.Identity, r.facts[h.Identity], r.TemplateFacts)
		for _, ev := range h.Events {
			if ev == nil || ev.Diff.Empty() {
				continue
			}
			shape := sh.shape
			shaped := shapeDiff(ev.Diff, shape)
			raw, err := json.Marshal(shaped)
			if err != nil {
				continue
			}
			k := key{shape(ev.ResourceID()), ev.Outcome(), string(raw)}
			g, ok := groups[k]
			if !ok {
				g = &DiffGroup{Resource: k.ref, Outcome: k.outcome, Diff: shaped}
				groups[k] = g
			}
			g.Hosts = append(g.Hosts, h.Identity)
		}
	}
	out := make([]DiffGroup, 0, len(groups))
	for _, g := range groups {
		slices.Sort(g.Hosts)
		g.Count = len(g.Hosts)
		out = append(out, *g)
	}
	slices.SortFunc(out, func(a, b DiffGroup) int {
		return cmp.Or(cmp.Compare(a.Resource, b.Resource), cmp.Compare(b.Count, a.Count), cmp.Compare(a.Hosts[0], b.Hosts[0]))
	})
	return out
}

// walkFacts follows a dotted path through nested maps.
func walkFacts(facts map[string]any, path string) (any, bool) {
	var cur any = facts
	for _, p := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[p]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// LoadFacts sets the facts DiffGroups uses for a result read from history
// (whose records keep no facts) to those the node registry holds today for
// its expected hosts; hosts the registry does not hold, or no registry,
// leave only the identity replaced.
func (c *Client) LoadFacts(ctx context.Context, r *Result) {
	if len(r.Expected) == 0 || len(r.TemplateFacts) == 0 {
		return
	}
	view, err := c.registryNodes(ctx, DiscoverOptions{Timeout: DefaultDiscoveryTimeout})
	if err != nil {
		c.log.Debug("no facts from the node registry for diff grouping", "error", err)
		return
	}
	want := make(map[string]bool, len(r.Expected))
	for _, h := range r.Expected {
		want[h] = true
	}
	r.facts = map[string]map[string]any{}
	for _, n := range view.nodes {
		if want[n.Identity] {
			r.facts[n.Identity] = n.Facts
		}
	}
}

// shapeDiff returns a copy of d with shape applied to every text in it.
func shapeDiff(d *protocol.Diff, shape func(string) string) *protocol.Diff {
	c := *d
	c.Content, c.Summary = shape(d.Content), shape(d.Summary)
	c.Changes = make([]protocol.Change, len(d.Changes))
	for i, ch := range d.Changes {
		c.Changes[i] = protocol.Change{Field: ch.Field, From: shape(ch.From), To: shape(ch.To)}
	}
	c.Files = make([]protocol.FileDiff, len(d.Files))
	for i, f := range d.Files {
		c.Files[i] = protocol.FileDiff{Path: shape(f.Path), Content: shape(f.Content), Summary: shape(f.Summary), Truncated: f.Truncated}
	}
	shapeAll := func(list []string) []string {
		out := make([]string, len(list))
		for i, p := range list {
			out[i] = shape(p)
		}
		return out
	}
	c.Added, c.Purged = shapeAll(d.Added), shapeAll(d.Purged)
	return &c
}
