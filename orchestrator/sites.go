package orchestrator

import (
	"cmp"
	"slices"

	"github.com/ccm-fleet/ccm/protocol"
)

// SiteHosts are the hosts of one site among a list of hosts (see BySite).
type SiteHosts struct {
	// Site is the hosts' site fact; empty for the hosts without one.
	Site string `json:"site"`
	// Count is len(Hosts).
	Count int `json:"count"`
	// Hosts are the identities, sorted.
	Hosts []string `json:"hosts"`
}

// BySite groups hosts by the site fact (protocol.SiteFact) that facts
// gives them: the largest group first, then by site name, the hosts with
// no site fact (a missing, empty or non-string fact, or no facts at all)
// last under Site "". It returns nil when hosts is empty or when no host
// in facts has a site, so a fleet without sites reports as before.
func BySite(hosts []string, facts map[string]map[string]any) []SiteHosts {
	if len(hosts) == 0 || !anySite(facts) {
		return nil
	}
	index := map[string]int{}
	var groups []SiteHosts
	for _, h := range hosts {
		site := siteOf(facts[h])
		i, ok := index[site]
		if !ok {
			i = len(groups)
			index[site] = i
			groups = append(groups, SiteHosts{Site: site})
		}
		groups[i].Hosts = append(groups[i].Hosts, h)
	}
	for i := range groups {
		slices.Sort(groups[i].Hosts)
		groups[i].Count = len(groups[i].Hosts)
	}
	slices.SortFunc(groups, func(a, b SiteHosts) int {
		if (a.Site == "") != (b.Site == "") {
			if a.Site == "" {
				return 1
			}
			return -1
		}
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Site, b.Site))
	})
	return groups
}

// siteOf returns the site fact of a host's facts, or "".
func siteOf(facts map[string]any) string {
	s, _ := facts[protocol.SiteFact].(string)
	return s
}

// anySite reports whether a host in facts has a site fact.
func anySite(facts map[string]map[string]any) bool {
	for _, f := range facts {
		if siteOf(f) != "" {
			return true
		}
	}
	return false
}
