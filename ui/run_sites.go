package ui

import "github.com/ccm-fleet/ccm/orchestrator"

// siteGroup is a run's hosts that did not reply in one site, as the run
// page lists them.
type siteGroup struct {
	// Label is "site NAME", "(no site)" or "(not in the registry)".
	Label string
	Hosts []string
}

// notRegistered labels the hosts whose registry entry is gone, whose site
// the dashboard therefore does not know.
const notRegistered = "(not in the registry)"

// noReplySites groups hosts, a run's hosts that did not reply, by the site
// fact of their registry entries (see orchestrator.BySite): the largest
// site first, the registered hosts without a site next, and the hosts no
// longer in the registry last. It returns nil when none of the registered
// hosts has a site, so a fleet without sites shows its list as before.
func (f *fleet) noReplySites(hosts []string) []siteGroup {
	facts := make(map[string]map[string]any, len(hosts))
	var known, gone []string
	for _, h := range hosts {
		n := f.node(h)
		if n == nil {
			gone = append(gone, h)
			continue
		}
		facts[h] = n.Facts
		known = append(known, h)
	}
	sites := orchestrator.BySite(known, facts)
	if sites == nil {
		return nil
	}
	out := make([]siteGroup, 0, len(sites)+1)
	for _, s := range sites {
		label := "site " + s.Site
		if s.Site == "" {
			label = "(no site)"
		}
		out = append(out, siteGroup{Label: label, Hosts: s.Hosts})
	}
	if len(gone) > 0 {
		out = append(out, siteGroup{Label: notRegistered, Hosts: gone})
	}
	return out
}
