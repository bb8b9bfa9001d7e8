package orchestrator_test

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/orchestrator"
	"github.com/ccm-fleet/ccm/orchestrator/fleettest"
	"github.com/ccm-fleet/ccm/protocol"
)

// version reads the simulated platform_version as a number.
func version(f map[string]any) float64 {
	return map[string]float64{"11": 11, "12.4": 12.4, "13": 13}[f["platform_version"].(string)]
}

var _ = Describe("Client.Discover", Ordered, func() {
	var (
		fl     *fleettest.Fleet
		nc     *nats.Conn
		client *orchestrator.Client
	)
	BeforeAll(func() {
		fl = startFleet()
		nc = fl.Connect(GinkgoT())
		client = orchestrator.New(nc)
	})

	identities := func(nodes []orchestrator.Node) []string {
		out := []string{}
		for _, n := range nodes {
			out = append(out, n.Identity)
		}
		return out
	}

	DescribeTable("selects exactly the hosts the filter matches",
		func(where, hosts []string, pred func(map[string]any) bool) {
			want := identitiesWhere(fl, pred)
			Expect(want).NotTo(BeEmpty(), "the table entry should select someone")
			Expect(len(want)).To(BeNumerically("<", fleetSize), "the table entry should leave someone out")
			for _, mode := range []orchestrator.DiscoveryMode{orchestrator.DiscoveryRegistry, orchestrator.DiscoveryBroadcast} {
				nodes, err := client.Discover(context.Background(), orchestrator.DiscoverOptions{Filter: mustFilter(where, hosts), Mode: mode})
				Expect(err).NotTo(HaveOccurred())
				Expect(identities(nodes)).To(Equal(want), "discovery by %s", mode)
			}
		},
		Entry("k=v", []string{"os=debian"}, nil, func(f map[string]any) bool { return f["os"] == "debian" }),
		Entry("k!=v", []string{"os!=debian"}, nil, func(f map[string]any) bool { return f["os"] != "debian" }),
		Entry("k=~regex", []string{"role=~^w"}, nil, func(f map[string]any) bool { return strings.HasPrefix(f["role"].(string), "w") }),
		Entry("k!~regex", []string{"role!~^w"}, nil, func(f map[string]any) bool { return !strings.HasPrefix(f["role"].(string), "w") }),
		Entry("k<n", []string{"platform_version<12"}, nil, func(f map[string]any) bool { return version(f) < 12 }),
		Entry("k<=n (version-aware)", []string{"platform_version<=12.4"}, nil, func(f map[string]any) bool { return version(f) <= 12.4 }),
		Entry("k>n", []string{"platform_version>12"}, nil, func(f map[string]any) bool { return version(f) > 12 }),
		Entry("k>=n", []string{"platform_version>=13"}, nil, func(f map[string]any) bool { return version(f) >= 13 }),
		Entry("terms are ANDed", []string{"os=rhel", "role=db"}, nil, func(f map[string]any) bool { return f["os"] == "rhel" && f["role"] == "db" }),
		Entry("exact --host ids", nil, []string{"sim-0007", "sim-0003"}, func(f map[string]any) bool {
			return f["identity"] == "sim-0003" || f["identity"] == "sim-0007"
		}),
		Entry("--host /regex/", nil, []string{"/^sim-000[1-5]$/"}, func(f map[string]any) bool { return f["identity"].(string) <= "sim-0005" }),
		Entry("--host and --where together", []string{"os=debian"}, []string{"/^sim-00(0|1)/"}, func(f map[string]any) bool {
			return f["os"] == "debian" && f["identity"].(string) < "sim-0020"
		}),
	)

	It("finds every host without a filter and returns their announced facts", func() {
		nodes, err := client.Discover(context.Background(), orchestrator.DiscoverOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(identities(nodes)).To(Equal(fl.Identities))
		Expect(nodes[1].Facts).To(HaveKeyWithValue("os", "rhel"))
		Expect(nodes[1].Facts).To(HaveKeyWithValue("identity", "sim-0002"))
		Expect(nodes[1].Version).To(Equal("fleettest"))
	})

	It("ends on the quiet window, not on the timeout", func() {
		// With an hour of timeout, only the quiet window can end the round.
		// It counts from the request: a second leaves the race-built agents
		// of a loaded machine time to answer first.
		nodes, err := client.Discover(context.Background(), orchestrator.DiscoverOptions{Timeout: time.Hour, Quiet: time.Second, Mode: orchestrator.DiscoveryBroadcast})
		Expect(err).NotTo(HaveOccurred())
		Expect(nodes).To(HaveLen(fleetSize))
	})

	It("returns an empty list when nobody matches", func() {
		nodes, err := client.Discover(context.Background(), orchestrator.DiscoverOptions{Filter: mustFilter([]string{"os=plan9"}, nil)})
		Expect(err).NotTo(HaveOccurred())
		Expect(nodes).To(BeEmpty())
	})

	It("asks on the narrowest subject", func() {
		sub := sniff(nc, protocol.DiscoverySubjectPrefix+".>")
		for _, where := range [][]string{{"os=debian"}, {"platform_version>12"}} {
			_, err := client.Discover(context.Background(), orchestrator.DiscoverOptions{Filter: mustFilter(where, nil), Mode: orchestrator.DiscoveryBroadcast})
			Expect(err).NotTo(HaveOccurred())
		}
		_, err := client.Discover(context.Background(), orchestrator.DiscoverOptions{Filter: mustFilter(nil, []string{"sim-0001", "sim-0002"}), Mode: orchestrator.DiscoveryBroadcast})
		Expect(err).NotTo(HaveOccurred())
		var subjects []string
		for _, m := range sent(nc, sub) {
			subjects = append(subjects, m.Subject)
		}
		Expect(subjects).To(Equal([]string{
			"ccm.v1.disc.fact.os.debian",
			"ccm.v1.disc.all",
			"ccm.v1.disc.node.sim-0001",
			"ccm.v1.disc.node.sim-0002",
		}))
	})

	It("drops malformed, non-matching and duplicate announcements", func() {
		resp, err := nc.Subscribe(protocol.DiscoverySubjectAll, func(m *nats.Msg) {
			req, err := protocol.DecodeDiscoveryRequest(m.Data, protocol.Limits{})
			if err != nil {
				return
			}
			announce := func(id, os string) {
				b, _ := json.Marshal(protocol.DiscoveryReply{Protocol: protocol.DiscoveryReplyProtocol, RequestID: req.ID, Identity: id, Facts: map[string]any{"os": os, "role": "web"}})
				_ = m.Respond(b)
			}
			_ = m.Respond([]byte(`{"protocol":"nonsense"}`))
			announce("liar", "plan9") // says it matched, but its facts fail os=~^deb
			announce("extra-1", "debian")
			announce("extra-1", "debian")
		})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(resp.Unsubscribe)
		Expect(nc.Flush()).To(Succeed())

		// os!=rhel is not a subject fact equality, so the request goes to ccm.v1.disc.all.
		nodes, err := client.Discover(context.Background(), orchestrator.DiscoverOptions{Filter: mustFilter([]string{"os!=rhel", "os=~^deb"}, nil), Mode: orchestrator.DiscoveryBroadcast})
		Expect(err).NotTo(HaveOccurred())
		want := append(identitiesWhere(fl, func(f map[string]any) bool { return f["os"] == "debian" }), "extra-1")
		Expect(identities(nodes)).To(ConsistOf(want))
	})

	It("refuses a filter that does not compile before sending anything", func() {
		sub := sniff(nc, protocol.DiscoverySubjectPrefix+".>")
		bad := &protocol.Filter{Where: []protocol.FilterTerm{{Key: "os", Op: "=~", Value: "["}}}
		_, err := client.Discover(context.Background(), orchestrator.DiscoverOptions{Filter: bad})
		Expect(err).To(MatchError(orchestrator.ErrInvalid))
		Expect(sent(nc, sub)).To(BeEmpty())
	})

	It("stops when its context ends", func() {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := client.Discover(ctx, orchestrator.DiscoverOptions{Timeout: time.Hour, Quiet: time.Hour})
		Expect(err).To(MatchError(context.Canceled))
	})
})
