package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/ccm-fleet/ccm/cmd/internal/diffview"
	"github.com/ccm-fleet/ccm/orchestrator"
)

// renderDiffGroups prints each group of hosts sharing a diff: the
// resource, the outcome, how many hosts and a few of their names, then the
// diff indented, with each host's identity and the facts its templates
// read shown as placeholders (<host>, <facts.KEY>).
func renderDiffGroups(w io.Writer, groups []orchestrator.DiffGroup, colour bool) {
	if len(groups) == 0 {
		fmt.Fprintln(w, "\nNo diffs.")
		return
	}
	fmt.Fprintf(w, "\nDiffs (%s):\n", plural(len(groups), "1 group", fmt.Sprintf("%d groups", len(groups))))
	for _, g := range groups {
		fmt.Fprintf(w, "\n%s %s on %s: %s\n", g.Resource, prose(g.Outcome), countHosts(g.Count), fewHosts(g.Hosts))
		diffview.Write(w, g.Diff, "    ", colour)
	}
}

// diffListedHosts is how many names a diff group lists.
const diffListedHosts = 5

// fewHosts joins at most diffListedHosts names, then "and N more".
func fewHosts(hosts []string) string {
	if len(hosts) <= diffListedHosts {
		return strings.Join(hosts, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(hosts[:diffListedHosts], ", "), len(hosts)-diffListedHosts)
}
