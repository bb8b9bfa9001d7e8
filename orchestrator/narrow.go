package orchestrator

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/ccm-fleet/ccm/protocol"
)

// Narrowing keeps part of the hosts a filter selects: first only the listed
// identities (a hosts file, the hosts of an earlier run), then a seeded
// random sample of what is left (Choria's --limit-nodes). The zero value
// keeps every host.
type Narrowing struct {
	// Only, when not nil, keeps only these identities; an empty, non-nil
	// list keeps nobody.
	Only []string
	// Sample, when positive, keeps at most this many hosts.
	Sample int
	// SamplePercent, when positive, keeps this percentage (1-100) of the
	// hosts, rounded up and at least one. Set Sample or SamplePercent, not
	// both.
	SamplePercent int
	// Seed chooses the sample: the same seed and the same hosts give the
	// same sample, and a host's place in it does not depend on the other
	// hosts, so a sample changes little when the fleet does.
	Seed uint64
}

// SampleReport says how a run's hosts were sampled, so the run can be
// repeated with the same seed; history keeps it with the request.
type SampleReport = protocol.Sample

// active reports whether n keeps less than every host.
func (n *Narrowing) active() bool {
	return n != nil && (n.Only != nil || n.sampling())
}

func (n *Narrowing) sampling() bool { return n != nil && (n.Sample > 0 || n.SamplePercent > 0) }

// Validate checks the narrowing: a sample size or a percentage (1-100),
// not both, and valid identities; errors wrap ErrInvalid.
func (n *Narrowing) Validate() error {
	if n == nil {
		return nil
	}
	switch {
	case n.Sample < 0:
		return fmt.Errorf("%w: sample size %d is negative", ErrInvalid, n.Sample)
	case n.SamplePercent < 0 || n.SamplePercent > 100:
		return fmt.Errorf("%w: sample percentage %d must be between 1 and 100", ErrInvalid, n.SamplePercent)
	case n.Sample > 0 && n.SamplePercent > 0:
		return fmt.Errorf("%w: give a sample size or a sample percentage, not both", ErrInvalid)
	}
	for _, id := range n.Only {
		if err := protocol.ValidateIdentity(id); err != nil {
			return fmt.Errorf("%w: %w", ErrInvalid, err)
		}
	}
	return nil
}

// Apply returns the identities of ids that n keeps, sorted and distinct,
// and the sample's report (nil when n does not sample).
func (n *Narrowing) Apply(ids []string) ([]string, *SampleReport) {
	out := uniqueSorted(ids)
	if n == nil {
		return out, nil
	}
	if n.Only != nil {
		only := make(map[string]bool, len(n.Only))
		for _, id := range n.Only {
			only[id] = true
		}
		out = slices.DeleteFunc(out, func(id string) bool { return !only[id] })
	}
	if !n.sampling() {
		return out, nil
	}
	rep := &SampleReport{Seed: n.Seed, Of: len(out)}
	k := n.Sample
	if n.SamplePercent > 0 {
		k = max(1, (len(out)*n.SamplePercent+99)/100)
	}
	if k < len(out) {
		rank := make(map[string]uint64, len(out))
		for _, id := range out {
			rank[id] = sampleRank(n.Seed, id)
		}
		slices.SortFunc(out, func(a, b string) int {
			if ra, rb := rank[a], rank[b]; ra != rb {
				if ra < rb {
					return -1
				}
				return 1
			}
			return strings.Compare(a, b)
		})
		out = out[:k]
		slices.Sort(out)
	}
	rep.Kept = len(out)
	return out, rep
}

// ApplyNodes is Apply on discovered nodes, kept in identity order.
func (n *Narrowing) ApplyNodes(nodes []Node) ([]Node, *SampleReport) {
	ids := make([]string, len(nodes))
	for i, nd := range nodes {
		ids[i] = nd.Identity
	}
	kept, rep := n.Apply(ids)
	out := slices.DeleteFunc(slices.Clone(nodes), func(nd Node) bool {
		_, found := slices.BinarySearch(kept, nd.Identity)
		return !found
	})
	return out, rep
}

// sampleRank places identity in the sample of seed: the hosts with the
// lowest ranks are kept.
func sampleRank(seed uint64, identity string) uint64 {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], seed)
	h := sha256.New()
	h.Write(b[:])
	h.Write([]byte(identity))
	return binary.BigEndian.Uint64(h.Sum(nil))
}

// ErrNoHostsFrom is returned by HostsFrom when the earlier run has no host
// with the outcome asked for: nothing would be sent.
var ErrNoHostsFrom = errors.New("no host to target")

// HostOutcomes are the outcomes HostsFrom selects by.
var HostOutcomes = []string{OutcomeFailed, OutcomeNoReply, OutcomeWouldChange, OutcomeChanged, OutcomeOK}

// HostsFrom returns the hosts of request id, as history holds its run,
// whose outcome is outcome (one of HostOutcomes), sorted. A request history
// has no record of is an error wrapping ErrNotFound; none with that outcome
// one wrapping ErrNoHostsFrom that counts the run's outcomes.
func (c *Client) HostsFrom(ctx context.Context, id, outcome string) ([]string, error) {
	if !slices.Contains(HostOutcomes, outcome) {
		return nil, fmt.Errorf("%w: outcome %q: use one of %s", ErrInvalid, outcome, strings.Join(HostOutcomes, ", "))
	}
	run, err := c.History(ctx, id)
	if err != nil {
		return nil, err
	}
	var hosts []string
	counts := map[string]int{}
	for _, h := range run.Result.Hosts {
		counts[h.Outcome]++
		if h.Outcome == outcome {
			hosts = append(hosts, h.Identity)
		}
	}
	if len(hosts) == 0 {
		var parts []string
		for _, o := range HostOutcomes {
			if counts[o] > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", counts[o], o))
			}
		}
		had := "no host results"
		if len(parts) > 0 {
			had = strings.Join(parts, ", ")
		}
		return nil, fmt.Errorf("%w: request %s has no host with outcome %s (it has %s)", ErrNoHostsFrom, id, outcome, had)
	}
	slices.Sort(hosts)
	return hosts, nil
}
