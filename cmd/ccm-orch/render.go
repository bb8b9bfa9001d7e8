package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ccm-fleet/ccm/orchestrator"
	"github.com/ccm-fleet/ccm/protocol"
)

// maxListedHosts caps the names printed under one heading.
const maxListedHosts = 20

// maxGroups caps the groups the text report shows, so it fits a screen
// at any fleet size; --verbose (or --json) shows them all.
const maxGroups = 20

// renderResult writes the human summary of a run: one line per group of
// outcomes of the same shape (orchestrator.Group) followed by its hosts (at
// most maxGroups groups unless verbose), then the hosts that did not reply,
// replied unasked or were never asked, then one summary line.
func renderResult(w io.Writer, res *orchestrator.Result, verbose bool) {
	if len(res.Expected) == 0 {
		return
	}
	groups, hidden := shownGroups(res.Groups, verbose)
	if hidden > 0 {
		fmt.Fprintln(w, hiddenGroupsLine(hidden, res.Groups[:len(res.Groups)-len(groups)]))
	}
	for _, g := range groups {
		fmt.Fprintf(w, "%s: %s\n", countHosts(g.Count), describeGroup(g))
		fmt.Fprintf(w, "    %s\n", listHosts(g.Hosts))
	}
	renderTrailer(w, res, false)
}

// shownGroups returns the groups a text report shows: all when verbose or
// when there are at most maxGroups, otherwise the last maxGroups (groups
// are sorted with problems last, so those are the ones kept), and how many
// were left out.
func shownGroups(groups []orchestrator.Group, verbose bool) ([]orchestrator.Group, int) {
	if verbose || len(groups) <= maxGroups {
		return groups, 0
	}
	return groups[len(groups)-maxGroups:], len(groups) - maxGroups
}

// hiddenGroupsLine says how many groups (and hosts in them) a report left
// out and how to see them.
func hiddenGroupsLine(n int, hidden []orchestrator.Group) string {
	hosts := 0
	for _, g := range hidden {
		hosts += g.Count
	}
	return fmt.Sprintf("%d more %s of %s not shown (--verbose or --json lists every group)", n, plural(n, "group", "groups"), countHosts(hosts))
}

// renderManifestResult writes the human summary of a manifest run: one line
// per resource with its hosts grouped by outcome, the hosts named for every
// outcome but stable ("file#/etc/motd: 412 stable, 3 would change (Would
// have ...) on web17, web23, web31"), then the hosts that refused the
// request, did not reply, replied unasked or were never asked, then one
// summary line.
//
// Unless verbose, each resource shows at most maxGroups groups and the
// request-level refusals at most maxGroups groups, the rest counted.
func renderManifestResult(w io.Writer, res *orchestrator.Result, verbose bool) {
	if len(res.Expected) == 0 {
		return
	}
	for _, rr := range res.Resources {
		groups, hidden := shownGroups(rr.Groups, verbose)
		parts := make([]string, 0, len(groups)+1)
		for _, g := range groups {
			parts = append(parts, describeOutcome(g))
		}
		if hidden > 0 {
			parts = append(parts, hiddenGroupsLine(hidden, rr.Groups[:hidden]))
		}
		fmt.Fprintf(w, "%s: %s\n", rr.Resource, strings.Join(parts, ", "))
	}
	var refused []orchestrator.Group
	for _, g := range res.Groups {
		if g.Outcome == orchestrator.GroupError {
			refused = append(refused, g)
		}
	}
	groups, hidden := shownGroups(refused, verbose)
	if hidden > 0 {
		fmt.Fprintf(w, "request refused: %s\n", hiddenGroupsLine(hidden, refused[:hidden]))
	}
	for _, g := range groups {
		fmt.Fprintf(w, "request refused: %s (%s) on %s\n", countHosts(g.Count), g.Message, listHosts(g.Hosts))
	}
	renderTrailer(w, res, true)
}

// describeOutcome renders one group of a resource: "3 would change (message)
// on h1, h2, h3"; stable hosts are only counted.
func describeOutcome(g orchestrator.Group) string {
	s := fmt.Sprintf("%d %s", g.Count, prose(g.Outcome))
	if g.Message != "" {
		s += " (" + g.Message + ")"
	}
	if g.Outcome != "stable" {
		s += " on " + listHosts(g.Hosts)
	}
	return s
}

// renderTrailer writes the hosts that did not reply, replied unasked or
// were never asked, each list with its note when it has one, then the
// summary line (with the resource counts when resources is set).
func renderTrailer(w io.Writer, res *orchestrator.Result, resources bool) {
	for _, l := range []struct {
		title string
		hosts []string
		// note follows the list, in parentheses, when not empty
		note string
	}{
		{noReplyTitle, res.NoReply, ""},
		{"still running when interrupted (they go on; their results land in history)", res.Running, ""},
		{"replied after the deadline", res.LateHosts, ""},
		{"replied without being asked", res.Unexpected, unaskedWhy(res.Discovery)},
		{"were not asked", res.NotAsked, ""},
		{"may not have been asked (the connection dropped before the server confirmed the request)", res.Unconfirmed, ""},
		{"sent a reply that did not arrive whole (parts missing or not matching)", res.Incomplete, ""},
	} {
		switch {
		case len(l.hosts) == 0:
		case l.title == noReplyTitle && len(res.NoReplyBySite) > 0:
			renderNoReplyBySite(w, res)
		default:
			fmt.Fprintf(w, "%s %s:\n    %s\n", countHosts(len(l.hosts)), l.title, listHosts(l.hosts))
			if l.note != "" {
				fmt.Fprintf(w, "    (%s)\n", l.note)
			}
		}
	}
	fmt.Fprintln(w, summaryLine(res, resources))
}

// unaskedWhy says why hosts that the request reached replied unasked
// (discovery did not find them, so their results count nowhere) and how to
// find them; "" when discovery was not the reason.
func unaskedWhy(discovery string) string {
	switch discovery {
	case protocol.DiscoveryBroadcast:
		return "the broadcast discovery round ended before they answered, so their results are not counted: " +
			"--discovery registry reads the node registry instead, and a --discovery-quiet as long as --discovery-timeout waits for the whole round"
	case protocol.DiscoveryRegistry:
		return "the node registry has no entry for them that the filter selects, so their results are not counted: " +
			"--discovery broadcast asks the hosts themselves"
	}
	return ""
}

// describeGroup renders "file#/etc/motd failed: reason".
func describeGroup(g orchestrator.Group) string {
	if g.Outcome == orchestrator.GroupError {
		return "request refused: " + g.Message
	}
	if g.Message != "" {
		return fmt.Sprintf("%s %s: %s", g.Resource, prose(g.Outcome), g.Message)
	}
	return fmt.Sprintf("%s %s", g.Resource, prose(g.Outcome))
}

// prose spells an outcome token for a sentence: would_change is "would
// change" (JSON and metric labels keep the token).
func prose(outcome string) string { return strings.ReplaceAll(outcome, "_", " ") }

// summaryLine renders the host counts (and the resource counts when
// resources is set) in one line.
func summaryLine(res *orchestrator.Result, resources bool) string {
	h := res.Summary.Hosts
	parts := []string{fmt.Sprintf("%d ok", h.OK), fmt.Sprintf("%d changed", h.Changed)}
	if res.Noop {
		parts = append(parts, fmt.Sprintf("%d would change", h.WouldChange))
	}
	parts = append(parts, fmt.Sprintf("%d failed", h.Failed), fmt.Sprintf("%d no reply", h.NoReply))
	if n := len(res.Running); n > 0 {
		parts = append(parts, fmt.Sprintf("%d still running", n))
	}
	if n := len(res.NotAsked); n > 0 {
		parts = append(parts, fmt.Sprintf("%d not asked", n))
	}
	if n := len(res.Unexpected); n > 0 {
		// Discovery missed them: the expected set was not the fleet.
		parts = append(parts, fmt.Sprintf("%d replied without being asked", n))
	}
	line := fmt.Sprintf("%d expected, %d replied: %s", len(res.Expected), res.Replied, strings.Join(parts, ", "))
	if resources {
		line += "; resources: " + resourceCounts(res.Summary.Resources, res.Noop)
	}
	var ignored []string
	for _, c := range []struct {
		n    int
		what string
	}{{res.Duplicates, "duplicate"}, {ignoredLate(res), "late"}, {res.Malformed, "malformed"}, {res.Spoofed, "spoofed"}} {
		if c.n > 0 {
			ignored = append(ignored, fmt.Sprintf("%d %s", c.n, c.what))
		}
	}
	if len(ignored) > 0 {
		line += "; ignored " + strings.Join(ignored, ", ") + " replies"
	}
	if res.Unverified > 0 {
		line += fmt.Sprintf("; %d unverified (no known key)", res.Unverified)
	}
	if n := res.Summary.FromHistory; n > 0 {
		line += fmt.Sprintf("; %d %s read from history after the connection came back", n, plural(n, "result", "results"))
	}
	if res.HistoryError != "" {
		line += "; history: request record not kept: " + res.HistoryError
	}
	return fmt.Sprintf("%s (request %s, %s)", line, res.RequestID, res.Elapsed.Round(time.Millisecond))
}

// renderNotices writes to w, the error stream, what a run could not do as
// asked, whatever the output format: a discovery that fell back to a
// broadcast, and a request record that history did not keep.
func renderNotices(w io.Writer, res *orchestrator.Result) {
	if res.DiscoveryFallback != "" {
		renderFallback(w, res.DiscoveryFallback, len(res.Expected))
	}
	if res.HistoryError != "" {
		fmt.Fprintf(w, "ccm-orch: history: the record of request %s was not kept: %s (history show will not find it)\n", res.RequestID, res.HistoryError)
	}
}

// renderInterrupted says on w, the error stream, that the run was
// interrupted while hosts were still running, that they go on and record
// their results, and the command that shows them.
func renderInterrupted(w io.Writer, res *orchestrator.Result) {
	if len(res.Running) == 0 {
		fmt.Fprintf(w, "ccm-orch: interrupted: no host was still running; request %s\n", res.RequestID)
	} else {
		fmt.Fprintf(w, "ccm-orch: interrupted: %s still running; they will finish and record their results (request %s)\n", countHosts(len(res.Running)), res.RequestID)
	}
	if res.HistoryError != "" {
		fmt.Fprintf(w, "ccm-orch: the request's record was not kept in history, so history show will not find it: %s\n", res.HistoryError)
		return
	}
	fmt.Fprintf(w, "ccm-orch: see every host's result with: ccm-orch history show %s\n", res.RequestID)
}

// renderFallback says on w that discovery broadcast instead of answering
// from the node registry, why, and how many hosts it found.
func renderFallback(w io.Writer, why string, found int) {
	fmt.Fprintf(w, "ccm-orch: discovery: %s; discovered by broadcast instead: %s\n", why, countHosts(found))
}

// resourceCounts renders "N stable, N changed, [N would change,] N failed,
// N skipped".
func resourceCounts(c orchestrator.ResourceCounts, noop bool) string {
	parts := []string{fmt.Sprintf("%d stable", c.Stable), fmt.Sprintf("%d changed", c.Changed)}
	if noop {
		parts = append(parts, fmt.Sprintf("%d would change", c.WouldChange))
	}
	parts = append(parts, fmt.Sprintf("%d failed", c.Failed), fmt.Sprintf("%d skipped", c.Skipped))
	return strings.Join(parts, ", ")
}

// plural is one when n is 1, else many.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// countHosts is "1 host" or "N hosts".
func countHosts(n int) string {
	if n == 1 {
		return "1 host"
	}
	return fmt.Sprintf("%d hosts", n)
}

// listHosts joins at most maxListedHosts names, then "and N more".
func listHosts(hosts []string) string {
	if len(hosts) <= maxListedHosts {
		return strings.Join(hosts, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(hosts[:maxListedHosts], ", "), len(hosts)-maxListedHosts)
}

// progressInterval is the least time between two redraws of the progress
// line; the last reply always redraws.
const progressInterval = 100 * time.Millisecond

// progress is the live line on a terminal's stderr: replied/expected, the
// outcomes so far and the time since the run started.
type progress struct {
	w     io.Writer
	noop  bool
	now   func() time.Time
	start time.Time

	// guards the fields below: the run reports from its own goroutine
	mu                sync.Mutex
	replied, expected int
	outcomes          map[string]int
	shown             bool
	drawn             time.Time
}

// newProgress returns a progress line on w when w is a terminal, else nil.
func newProgress(w io.Writer, noop bool) *progress {
	f, ok := w.(*os.File)
	if !ok {
		return nil
	}
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return nil
	}
	return startProgress(w, noop, time.Now)
}

func startProgress(w io.Writer, noop bool, now func() time.Time) *progress {
	return &progress{w: w, noop: noop, now: now, start: now(), outcomes: map[string]int{}}
}

// update takes the run's replied and expected counts (Request.Progress).
func (p *progress) update(replied, expected int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.replied, p.expected = replied, expected
	p.drawLocked(replied == expected)
}

// reply counts a host's outcome (Request.OnReply); the update that follows
// it draws.
func (p *progress) reply(h orchestrator.HostResult) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.outcomes[h.Outcome]++
}

// drawLocked redraws the line, at most every progressInterval unless
// force.
func (p *progress) drawLocked(force bool) {
	now := p.now()
	if !force && now.Sub(p.drawn) < progressInterval {
		return
	}
	parts := []string{fmt.Sprintf("%d/%d replied", p.replied, p.expected),
		fmt.Sprintf("%d ok", p.outcomes[orchestrator.OutcomeOK]), fmt.Sprintf("%d changed", p.outcomes[orchestrator.OutcomeChanged])}
	if p.noop {
		parts = append(parts, fmt.Sprintf("%d would change", p.outcomes[orchestrator.OutcomeWouldChange]))
	}
	parts = append(parts, fmt.Sprintf("%d failed", p.outcomes[orchestrator.OutcomeFailed]))
	fmt.Fprintf(p.w, "\r%s (%s)\033[K", strings.Join(parts, ", "), now.Sub(p.start).Round(100*time.Millisecond))
	p.shown, p.drawn = true, now
}

// clear erases the line; a nil progress does nothing.
func (p *progress) clear() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shown {
		fmt.Fprint(p.w, "\r\033[K")
	}
}

// ignoredLate counts the late replies a result left out: those of hosts
// still counted as no reply (a live run). Rebuilt from history, late
// replies count and are not ignored.
func ignoredLate(res *orchestrator.Result) int {
	n := 0
	for _, h := range res.LateHosts {
		if slices.Contains(res.NoReply, h) {
			n++
		}
	}
	return n
}
