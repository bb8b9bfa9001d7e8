package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/ccm-fleet/ccm/orchestrator"
)

// noReplyTitle heads the hosts that did not reply.
const noReplyTitle = "did not reply"

// renderNoReplyBySite writes the hosts that did not reply grouped by site:
// "40 hosts did not reply (site fra1: 38, site ams2: 2):", then one line
// per site with its hosts.
func renderNoReplyBySite(w io.Writer, res *orchestrator.Result) {
	counts := make([]string, len(res.NoReplyBySite))
	for i, g := range res.NoReplyBySite {
		counts[i] = fmt.Sprintf("%s: %d", siteLabel(g.Site), g.Count)
	}
	fmt.Fprintf(w, "%s %s (%s):\n", countHosts(len(res.NoReply)), noReplyTitle, strings.Join(counts, ", "))
	for _, g := range res.NoReplyBySite {
		fmt.Fprintf(w, "    %s: %s\n", siteLabel(g.Site), listHosts(g.Hosts))
	}
}

// siteLabel names a site group: "site fra1", or "(no site)" for the hosts
// without a site fact.
func siteLabel(site string) string {
	if site == "" {
		return "(no site)"
	}
	return "site " + site
}
