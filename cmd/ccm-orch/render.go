package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/ccm-fleet/ccm/orchestrator"
)

// maxListedHosts caps the names printed under one heading.
const maxListedHosts = 20

// renderResult writes the human summary of a run: one line per group of
// identical outcomes followed by its hosts, then the hosts that did not
// reply, replied unasked or were never asked, then one summary line.
func renderResult(w io.Writer, res *orchestrator.Result) {
	if len(res.Expected) == 0 {
		return
	}
	for _, g := range res.Groups {
		fmt.Fprintf(w, "%s: %s\n", countHosts(g.Count), describeGroup(g))
		fmt.Fprintf(w, "    %s\n", listHosts(g.Hosts))
	}
	for _, l := range []struct {
		title string
		hosts []string
	}{
		{"did not reply", res.NoReply},
		{"replied without being asked", res.Unexpected},
		{"were not asked", res.NotAsked},
	} {
		if len(l.hosts) > 0 {
			fmt.Fprintf(w, "%s %s:\n    %s\n", countHosts(len(l.hosts)), l.title, listHosts(l.hosts))
		}
	}
	fmt.Fprintln(w, summaryLine(res))
}

// describeGroup renders "file#/etc/motd failed: reason".
func describeGroup(g orchestrator.Group) string {
	if g.Outcome == orchestrator.GroupError {
		return "request refused: " + g.Message
	}
	if g.Message != "" {
		return fmt.Sprintf("%s %s: %s", g.Resource, g.Outcome, g.Message)
	}
	return fmt.Sprintf("%s %s", g.Resource, g.Outcome)
}

// summaryLine renders the counts in one line.
func summaryLine(res *orchestrator.Result) string {
	h := res.Summary.Hosts
	parts := []string{fmt.Sprintf("%d ok", h.OK), fmt.Sprintf("%d changed", h.Changed)}
	if res.Noop {
		parts = append(parts, fmt.Sprintf("%d would change", h.WouldChange))
	}
	parts = append(parts, fmt.Sprintf("%d failed", h.Failed), fmt.Sprintf("%d no reply", h.NoReply))
	if n := len(res.NotAsked); n > 0 {
		parts = append(parts, fmt.Sprintf("%d not asked", n))
	}
	line := fmt.Sprintf("%d expected, %d replied: %s", len(res.Expected), res.Replied, strings.Join(parts, ", "))
	var ignored []string
	for _, c := range []struct {
		n    int
		what string
	}{{res.Duplicates, "duplicate"}, {res.Late, "late"}, {res.Malformed, "malformed"}} {
		if c.n > 0 {
			ignored = append(ignored, fmt.Sprintf("%d %s", c.n, c.what))
		}
	}
	if len(ignored) > 0 {
		line += "; ignored " + strings.Join(ignored, ", ") + " replies"
	}
	return fmt.Sprintf("%s (request %s, %s)", line, res.RequestID, res.Elapsed.Round(time.Millisecond))
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

// progress is the live "replied/expected" line on a terminal's stderr.
type progress struct {
	w     io.Writer
	shown bool
	drawn time.Time
}

// newProgress returns a progress line on w when w is a terminal, else nil.
func newProgress(w io.Writer) *progress {
	f, ok := w.(*os.File)
	if !ok {
		return nil
	}
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return nil
	}
	return &progress{w: w}
}

// update redraws the line, at most every progressInterval.
func (p *progress) update(replied, expected int) {
	if now := time.Now(); replied == expected || now.Sub(p.drawn) >= progressInterval {
		fmt.Fprintf(p.w, "\r%d/%d replied", replied, expected)
		p.shown, p.drawn = true, now
	}
}

// clear erases the line; a nil progress does nothing.
func (p *progress) clear() {
	if p != nil && p.shown {
		fmt.Fprint(p.w, "\r\033[K")
	}
}
