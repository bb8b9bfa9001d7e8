package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSiteGroupsSpreadAgentsEvenly(t *testing.T) {
	sites := []siteBroker{{"s1", "nats://a"}, {"s2", "nats://b"}, {"s3", "nats://c"}, {"s4", "nats://d"}}
	groups, err := siteGroups(202, sites, 20000)
	if err != nil {
		t.Fatal(err)
	}
	want := []agentGroup{{"nats://a", "s1", 51}, {"nats://b", "s2", 51}, {"nats://c", "s3", 50}, {"nats://d", "s4", 50}}
	if len(groups) != len(want) {
		t.Fatalf("groups %+v, want %+v", groups, want)
	}
	for i := range want {
		if groups[i] != want[i] {
			t.Errorf("group %d = %+v, want %+v", i, groups[i], want[i])
		}
	}

	// 20,000 agents over 4 sites, 20,000 open files a process: 5,000 a
	// site fit one broker, and need 2 processes of 2,500 (6 files each).
	groups, err = siteGroups(20000, sites, 20000)
	if err != nil {
		t.Fatal(err)
	}
	perSite := map[string]int{}
	total := 0
	for _, g := range groups {
		if g.count != 2500 {
			t.Errorf("group %+v: want 2500 agents", g)
		}
		perSite[g.site]++
		total += g.count
	}
	if total != 20000 || len(perSite) != 4 || perSite["s1"] != 2 || perSite["s4"] != 2 {
		t.Errorf("20000 agents: %d in all, processes per site %v; want 20000 and 2 at each of 4 sites", total, perSite)
	}
}

func TestSiteGroupsRefuseASiteNeedingACluster(t *testing.T) {
	_, err := siteGroups(1000, []siteBroker{{"s1", "nats://a"}, {"s2", "nats://b"}}, 300)
	if err == nil || !strings.Contains(err.Error(), "site s1: 500 agents need") || !strings.Contains(err.Error(), "use more sites") {
		t.Fatalf("err = %v; want site s1 named and more sites asked for", err)
	}
}

func TestSiteNames(t *testing.T) {
	if got := strings.Join(siteNames(4), ","); got != "s1,s2,s3,s4" {
		t.Errorf("siteNames(4) = %s", got)
	}
}

func TestValidateSites(t *testing.T) {
	brokerBin := filepath.Join(t.TempDir(), "ccm-broker")
	if err := os.WriteFile(brokerBin, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Sizes: []int{200}}, ""},
		{Config{Sizes: []int{200}, Sites: 4, BrokerBin: brokerBin, Rows: []string{"noop", "noop-sites"}}, ""},
		{Config{Sizes: []int{200}, Sites: -1, BrokerBin: brokerBin}, "sites -1 must be between 0 (off) and 64"},
		{Config{Sizes: []int{200}, Sites: 65, BrokerBin: brokerBin}, "sites 65 must be between"},
		{Config{Sizes: []int{200}, Rows: []string{"noop-sites"}}, "the noop-sites row needs sites (ccm-bench --sites K)"},
		{Config{Sizes: []int{200}, Sites: 4}, "sites need the ccm-broker binary"},
		{Config{Sizes: []int{200}, Sites: 4, BrokerBin: brokerBin + "-missing"}, "make build first"},
		{Config{Sizes: []int{200, 3}, Sites: 4, BrokerBin: brokerBin}, "fleet size 3 is smaller than 4 sites"},
	} {
		err := c.cfg.validateSites()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%+v: %v", c.cfg, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%+v: err = %v, want %q", c.cfg, err, c.want)
		}
	}
}

func TestSitesRowComparedWithOneCluster(t *testing.T) {
	rows := []Row{
		{Name: "floor", Agents: 200, MedianMS: 10, BenchCPUSeconds: 0.02},
		{Name: "floor-signed", Agents: 200, MedianMS: 20, BenchCPUSeconds: 0.04},
		{Name: "noop", Agents: 200, Discovery: "registry", MedianMS: 40},
		{Name: "noop", Agents: 200, Discovery: "broadcast", MedianMS: 1000},
		{Name: "noop", Agents: 100, Discovery: "registry", MedianMS: 1},
	}
	for i := range rows {
		rows[i].perHost()
	}
	r := Row{Name: "noop-sites", Agents: 200, Sites: 4, Discovery: "registry", MedianMS: 50, BenchCPUSeconds: 0.08}
	r.compare(rows)
	if r.FloorRatio != 5 || r.SignedFloorRatio != 2.5 || r.CentralFloorRatio != 4 || r.CentralSignedFloorRatio != 2 {
		t.Errorf("x floor %v, x signed %v, central x floor %v, central x signed %v; want 5, 2.5, 4 and 2",
			r.FloorRatio, r.SignedFloorRatio, r.CentralFloorRatio, r.CentralSignedFloorRatio)
	}
	if r.OneClusterRatio != 1.25 {
		t.Errorf("one-cluster ratio %v, want 1.25 (over the registry noop row of the same size)", r.OneClusterRatio)
	}
	want := "200 agents over 4 sites (leaf nodes, own JetStream domains), orchestrator at the hub; median 1.25x the one-cluster noop (registry) median"
	if r.Note != want {
		t.Errorf("note %q\nwant %q", r.Note, want)
	}

	// Without a one-cluster noop row, no ratio; a failed round's error
	// stays in the note.
	alone := Row{Name: "noop-sites", Agents: 200, Sites: 4, MedianMS: 50, Note: "noop-sites: exit 3, 199 of 200 replied"}
	alone.compare(rows[:2])
	if alone.OneClusterRatio != 0 || alone.FloorRatio != 5 {
		t.Errorf("one-cluster ratio %v, x floor %v; want none and 5", alone.OneClusterRatio, alone.FloorRatio)
	}
	if !strings.HasSuffix(alone.Note, "orchestrator at the hub; last failed round: noop-sites: exit 3, 199 of 200 replied") {
		t.Errorf("note %q", alone.Note)
	}
}
