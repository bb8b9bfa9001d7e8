package orchestrator

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/ccm-fleet/ccm/protocol"
)

// Host outcomes, the Outcome of a HostResult and the keys of HostCounts.
const (
	// OutcomeOK: the host replied and every resource was already as asked
	// (or was skipped).
	OutcomeOK = "ok"
	// OutcomeChanged: the host changed (or refreshed) at least one resource
	// and nothing failed.
	OutcomeChanged = "changed"
	// OutcomeFailed: a resource failed, or the host answered with a
	// request-level error (bad_request, expired, busy, ...).
	OutcomeFailed = "failed"
	// OutcomeWouldChange: noop only, at least one resource would change and
	// nothing failed.
	OutcomeWouldChange = "would_change"
	// OutcomeNoReply: the host was asked and did not reply before its
	// deadline.
	OutcomeNoReply = "no_reply"
)

// GroupError is the Outcome of a Group of hosts that answered with the same
// request-level error.
const GroupError = "error"

// Result is the outcome of a Run.
type Result struct {
	// RequestID names the request in replies and history.
	RequestID string `json:"request_id"`
	// Noop is whether the request was a dry run.
	Noop bool `json:"noop"`
	// Expected is the expected set: the hosts discovery found or the
	// explicit hosts, sorted.
	Expected []string `json:"expected"`
	// Sample says how the expected set was sampled (Narrowing), so the
	// run can be repeated with its seed; omitted when it was not.
	Sample *SampleReport `json:"sample,omitempty"`
	// Replied counts the expected hosts that replied.
	Replied int `json:"replied"`
	// NoReply lists the asked hosts that did not reply in time.
	NoReply []string `json:"no_reply"`
	// NoReplyBySite groups NoReply by the hosts' site fact as discovery
	// saw it (see BySite); omitted when no expected host has a site, and
	// when the hosts' facts are not known (hosts given, or a result
	// rebuilt from history).
	NoReplyBySite []SiteHosts `json:"no_reply_by_site,omitempty"`
	// Unexpected lists hosts that replied without being asked (not in the
	// expected set, or not asked yet); they count nowhere else.
	Unexpected []string `json:"unexpected"`
	// NotAsked lists expected hosts never sent the request because a batch
	// run stopped (MaxFailures) or was cancelled.
	NotAsked []string `json:"not_asked"`
	// Hosts are the per-host results of every asked host, sorted by
	// identity; hosts that did not reply have Outcome no_reply.
	Hosts []HostResult `json:"hosts"`
	// Summary counts hosts and resources by outcome.
	Summary Summary `json:"summary"`
	// Groups gathers hosts with identical outcomes.
	Groups []Group `json:"groups"`
	// Resources are the same groups per resource, in the order the request
	// declared its resources (resources it did not name come last, by
	// ref), each with its event counts.
	Resources []ResourceResult `json:"resources"`
	// Duplicates counts extra replies from a host that already replied.
	Duplicates int `json:"duplicates"`
	// Late counts the hosts whose reply arrived after their deadline (see
	// LateHosts): in a live run they are ignored and the host stays in
	// NoReply; rebuilt from history they count.
	Late int `json:"late"`
	// Malformed counts replies that failed strict decoding or answered
	// another request; they are not trusted.
	Malformed int `json:"malformed"`
	// Spoofed counts replies claiming an identity whose public key is known
	// (registry or discovery) without a valid signature by that key; they
	// are not trusted.
	Spoofed int `json:"spoofed"`
	// Unverified counts the hosts whose reply was taken without a known
	// key to check its signature against.
	Unverified int `json:"unverified"`
	// LateHosts lists the hosts whose reply came after their deadline. In
	// a live run they stay in NoReply; rebuilt from history (see
	// Client.History) they count with the outcome they reported.
	LateHosts []string `json:"late_hosts"`
	// Reconnects counts the times the connection came back during the
	// collection; after each, the hosts that had not replied are looked
	// up in history (see Client.Run). It is not in the JSON document, so
	// that a run rebuilt from history (which cannot know it) still equals
	// the live one when nothing was lost.
	Reconnects int `json:"-"`
	// Unconfirmed lists the hosts whose request the server did not
	// confirm receiving (the connection dropped before it was flushed):
	// they may not have been asked at all.
	Unconfirmed []string `json:"unconfirmed,omitempty"`
	// Incomplete lists the hosts whose reply arrived only in part (a
	// reply too large for one message is sent in parts), or whose
	// history record's parts could not all be read or did not match, and
	// that have no result: they are also in NoReply (live) or counted
	// malformed (history).
	Incomplete []string `json:"incomplete,omitempty"`
	// Discovery is how the expected set was found: "hosts" (given),
	// "registry" or "broadcast"; see the protocol.Discovery constants.
	Discovery string `json:"discovery"`
	// DiscoveryFallback says why discovery broadcast instead of answering
	// from the node registry alone (see DiscoveryResult.Fallback); empty
	// when it did not fall back.
	DiscoveryFallback string `json:"discovery_fallback,omitempty"`
	// Interrupted is set when the caller's context ended the collection
	// (ccm-orch: Ctrl-C) before every asked host was accounted for.
	Interrupted bool `json:"interrupted,omitempty"`
	// Running lists, when Interrupted, the asked hosts that had neither
	// replied nor passed their deadline: they have the request and go on
	// running it, and their results land in history. They are not in
	// Hosts or NoReply.
	Running []string `json:"running,omitempty"`
	// Async is set when the request was sent without waiting for replies.
	Async bool `json:"async,omitempty"`
	// HistoryError says why the request could not be recorded in history,
	// when it could not.
	HistoryError string `json:"history_error,omitempty"`
	// facts are the expected hosts' facts as discovery saw them, by
	// identity, for the groups' message shapes (see shaper); nil when the
	// hosts were given or the result was rebuilt from history.
	facts map[string]map[string]any
	// Elapsed is how long the run took, discovery included.
	Elapsed time.Duration `json:"elapsed"`
	// ExitCode classifies the run as documented: 1, 2, 3, 5, 0 in that
	// precedence, and 4 when no host matched.
	ExitCode protocol.ExitCode `json:"exit_code"`
	// TemplateFacts are the fact paths the request's templates name (see
	// TemplateFacts); DiffGroups replaces only their values.
	TemplateFacts []string `json:"-"`
}

// HostResult is what one asked host answered.
type HostResult struct {
	Identity string `json:"identity"`
	// Outcome is one of the Outcome constants.
	Outcome string `json:"outcome"`
	// Events are the transaction events of the host's resources.
	Events []*protocol.TransactionEvent `json:"events"`
	// Error is the host's request-level error, if any.
	Error *protocol.Error `json:"error"`
	// Duration is how long the host took, as the host reports it.
	Duration time.Duration `json:"duration"`
	// Source is SourceHistory when the result was read from the host's
	// history record because its reply was lost while the connection was
	// down; empty for a reply received live.
	Source string `json:"source,omitempty"`
}

// SourceHistory is the Source of a HostResult read from history during a
// run (see Client.Run).
const SourceHistory = "history"

// Summary counts the run's hosts and resources by outcome.
type Summary struct {
	Hosts     HostCounts     `json:"hosts"`
	Resources ResourceCounts `json:"resources"`
	// FromHistory counts the hosts whose result was read from history
	// after the connection came back (Source SourceHistory).
	FromHistory int `json:"from_history,omitempty"`
}

// HostCounts counts asked hosts by outcome.
type HostCounts struct {
	OK          int `json:"ok"`
	Changed     int `json:"changed"`
	Failed      int `json:"failed"`
	WouldChange int `json:"would_change"`
	NoReply     int `json:"no_reply"`
}

// ResourceCounts counts the resources in the replies by outcome; a
// refreshed resource counts as changed.
type ResourceCounts struct {
	Stable      int `json:"stable"`
	Changed     int `json:"changed"`
	Failed      int `json:"failed"`
	Skipped     int `json:"skipped"`
	WouldChange int `json:"would_change"`
}

// Group is a set of hosts whose resource ended the same way: the same
// outcome with the same message shape.
type Group struct {
	// Resource is the resource reference, type#name, as the request named
	// it (templates unexpanded); empty for a request-level error.
	Resource string `json:"resource"`
	// Outcome is the event outcome (stable, skipped, refreshed, changed,
	// would_change, failed; see protocol.TransactionEvent.Outcome) or
	// GroupError.
	Outcome string `json:"outcome"`
	// Message is the failure (errors joined with "; "), the noop message, or
	// the request-level error as "code: message", with each host's identity
	// replaced by HostPlaceholder and the values of its facts by
	// <facts.KEY>: hosts whose messages differ only by their own identity
	// and facts share a group (see shaper). Each host's own message is in
	// its HostResult's events.
	Message string `json:"message,omitempty"`
	// Hosts are the identities in the group, sorted.
	Hosts []string `json:"hosts"`
	// Count is len(Hosts).
	Count int `json:"count"`
}

// ResourceResult is one resource's outcomes across the hosts.
type ResourceResult struct {
	// Resource is the resource reference, type#name, as the request named
	// it (templates unexpanded).
	Resource string `json:"resource"`
	// Counts counts the resource's events by outcome.
	Counts ResourceCounts `json:"counts"`
	// Groups are the resource's groups of hosts, settled outcomes first.
	Groups []Group `json:"groups"`
}

// hostOutcome classifies one reply.
func hostOutcome(noop bool, r *protocol.FleetReply) string {
	if r.Error != nil {
		return OutcomeFailed
	}
	out := OutcomeOK
	for _, ev := range r.Events {
		switch {
		case ev.Failed:
			return OutcomeFailed
		case noop && (ev.Changed || ev.Refreshed):
			out = OutcomeWouldChange
		case ev.Changed || ev.Refreshed:
			out = OutcomeChanged
		}
	}
	return out
}

// newHostResult turns an accepted reply into a HostResult.
func newHostResult(noop bool, r *protocol.FleetReply) HostResult {
	events := r.Events
	if events == nil {
		events = []*protocol.TransactionEvent{}
	}
	return HostResult{Identity: r.Identity, Outcome: hostOutcome(noop, r), Events: events, Error: r.Error, Duration: r.Duration}
}

// groupKey identifies a group.
type groupKey struct{ resource, outcome, message string }

// outcomeRank orders groups: settled outcomes first, problems last, so the
// problems end up next to the summary.
var outcomeRank = map[string]int{"stable": 0, "skipped": 1, "refreshed": 2, "changed": 3, protocol.EventWouldChange: 4, "failed": 5, GroupError: 6}

// summarize fills Summary, Groups, Resources and ExitCode from Hosts. names
// gives each event's resource as the request declared it; nil uses the
// events' own refs.
func (r *Result) summarize(names *refNamer) {
	r.Summary = Summary{}
	groups := map[groupKey][]string{}
	resources := map[string]*ResourceResult{}
	order := map[string]int{}
	for _, h := range r.Hosts {
		if h.Source == SourceHistory {
			r.Summary.FromHistory++
		}
		switch h.Outcome {
		case OutcomeOK:
			r.Summary.Hosts.OK++
		case OutcomeChanged:
			r.Summary.Hosts.Changed++
		case OutcomeFailed:
			r.Summary.Hosts.Failed++
		case OutcomeWouldChange:
			r.Summary.Hosts.WouldChange++
		case OutcomeNoReply:
			r.Summary.Hosts.NoReply++
			continue
		}
		sh := newShaper(h.Identity, r.facts[h.Identity])
		if h.Error != nil {
			k := groupKey{outcome: GroupError, message: sh.shape(string(h.Error.Code) + ": " + h.Error.Message)}
			groups[k] = append(groups[k], h.Identity)
		}
		for _, ev := range h.Events {
			named := names.name(ev, len(h.Events) == 1)
			k := eventKey(ev, named.ref)
			k.message = sh.shape(k.message)
			r.Summary.Resources.count(k.outcome)
			rr := resources[k.resource]
			if rr == nil {
				rr = &ResourceResult{Resource: k.resource}
				resources[k.resource] = rr
				order[k.resource] = named.order
			}
			rr.Counts.count(k.outcome)
			// A host whose events share a declared name (a name
			// template expanded to several resources) is listed once.
			if g := groups[k]; len(g) == 0 || g[len(g)-1] != h.Identity {
				groups[k] = append(groups[k], h.Identity)
			}
		}
	}
	r.Groups = make([]Group, 0, len(groups))
	for k, hosts := range groups {
		slices.Sort(hosts)
		r.Groups = append(r.Groups, Group{Resource: k.resource, Outcome: k.outcome, Message: k.message, Hosts: hosts, Count: len(hosts)})
	}
	slices.SortFunc(r.Groups, func(a, b Group) int {
		return cmp.Or(
			cmp.Compare(outcomeRank[a.Outcome], outcomeRank[b.Outcome]),
			strings.Compare(a.Resource, b.Resource),
			strings.Compare(a.Message, b.Message),
		)
	})
	r.Resources = make([]ResourceResult, 0, len(resources))
	for _, rr := range resources {
		r.Resources = append(r.Resources, *rr)
	}
	slices.SortFunc(r.Resources, func(a, b ResourceResult) int {
		return cmp.Or(cmp.Compare(order[a.Resource], order[b.Resource]), strings.Compare(a.Resource, b.Resource))
	})
	for i := range r.Resources {
		rr := &r.Resources[i]
		rr.Groups = []Group{}
		for _, g := range r.Groups {
			if g.Outcome != GroupError && g.Resource == rr.Resource {
				rr.Groups = append(rr.Groups, g)
			}
		}
	}
	r.ExitCode = exitCode(len(r.Expected), r.Summary.Hosts, len(r.NotAsked), r.Noop)
}

// eventKey is the group of one event whose resource the request named ref.
func eventKey(ev *protocol.TransactionEvent, ref string) groupKey {
	k := groupKey{resource: ref, outcome: ev.Outcome()}
	switch k.outcome {
	case "failed":
		k.message = strings.Join(ev.Errors, "; ")
	case protocol.EventWouldChange:
		k.message = ev.NoopMessage
	case "skipped":
		if len(ev.UnmetRequirements) > 0 {
			k.message = "unmet requirements " + strings.Join(ev.UnmetRequirements, ", ")
		}
	}
	return k
}

func (c *ResourceCounts) count(outcome string) {
	switch outcome {
	case "failed":
		c.Failed++
	case "skipped":
		c.Skipped++
	case protocol.EventWouldChange:
		c.WouldChange++
	case "changed", "refreshed":
		c.Changed++
	default:
		c.Stable++
	}
}

// exitCode applies the documented classification: no expected host is 4;
// otherwise a failure is 2, then a missing reply (or a host never asked) is
// 3, then drift under noop is 5, else 0. Exit code 1 belongs to errors,
// which Run returns instead of a Result.
func exitCode(expected int, hosts HostCounts, notAsked int, noop bool) protocol.ExitCode {
	switch {
	case expected == 0:
		return protocol.ExitNoMatch
	case hosts.Failed > 0:
		return protocol.ExitFailed
	case hosts.NoReply > 0 || notAsked > 0:
		return protocol.ExitNoReply
	case noop && hosts.WouldChange > 0:
		return protocol.ExitDrift
	default:
		return protocol.ExitOK
	}
}
