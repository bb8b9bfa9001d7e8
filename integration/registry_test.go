package integration_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/agent"
	"github.com/ccm-fleet/ccm/broker/brokertest"
	"github.com/ccm-fleet/ccm/jsstore"
	"github.com/ccm-fleet/ccm/orchestrator"
	"github.com/ccm-fleet/ccm/protocol"
)

// registryIdentities lists the identities in the node registry at url.
func registryIdentities(url string) []string {
	GinkgoHelper()
	nc, err := nats.Connect(url)
	Expect(err).ToNot(HaveOccurred())
	defer nc.Close()
	js, err := jetstream.New(nc)
	Expect(err).ToNot(HaveOccurred())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	nodes, _, err := jsstore.ReadRegistry(ctx, js)
	Expect(err).ToNot(HaveOccurred())
	out := []string{}
	for _, n := range nodes {
		out = append(out, n.Identity)
	}
	sort.Strings(out)
	return out
}

var _ = Describe("The node registry with 1,000 simulated agents", Ordered, func() {
	var f *fleet

	BeforeAll(func() {
		f = startFleetWith(fleetOptions{history: true, config: agent.Config{MaxConcurrent: 1, Heartbeat: 5 * time.Second}},
			1000, "reg", map[string]any{"dc": "ams"}, "os=debian,rhel,ubuntu", "role=web,db,cache,queue", "cpus=2,4,8,16,32")
	})

	It("holds every agent, a first put that timed out on a busy machine being retried", func() {
		Eventually(func() []string { return registryIdentities(f.url) }).WithTimeout(60 * time.Second).WithPolling(time.Second).
			Should(Equal(f.identitiesOf()))
	})

	DescribeTable("discovery by registry returns exactly the hosts the filter selects",
		func(terms ...string) {
			flt, err := protocol.ParseFilter(terms)
			Expect(err).ToNot(HaveOccurred())
			want := []string{}
			for id, fs := range f.factsOf() {
				if flt.Match(fs) {
					want = append(want, id)
				}
			}
			sort.Strings(want)
			args := []string{"discover", "--discovery", "registry", "--json"}
			for _, t := range terms {
				args = append(args, "--where", t)
			}
			code, out, errOut := f.orch(args...)
			if len(want) == 0 {
				Expect(code).To(Equal(4), errOut)
				return
			}
			Expect(code).To(Equal(0), errOut)
			var nodes []orchestrator.Node
			Expect(json.Unmarshal([]byte(out), &nodes)).To(Succeed())
			got := []string{}
			for _, n := range nodes {
				got = append(got, n.Identity)
			}
			Expect(got).To(Equal(want))
		},
		Entry("everyone", "dc=ams"),
		Entry("an equality", "os=ubuntu"),
		Entry("a negation", "role!=web"),
		Entry("a regular expression", "role=~^(db|cache)$"),
		Entry("numbers", "cpus>=8", "cpus<32"),
		Entry("ANDed terms", "os=rhel", "role=queue", "cpus>4"),
		Entry("nobody", "os=plan9"),
	)

	It("ends collection the moment the last expected host replies, and lists a host that replied unexpected", func() {
		// A host the registry does not know answers the request too.
		nc, err := nats.Connect(f.url)
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(nc.Close)
		js, err := jetstream.New(nc)
		Expect(err).ToNot(HaveOccurred())
		_, err = nc.Subscribe(protocol.RequestFactSubject("role", "queue"), func(m *nats.Msg) {
			req, err := protocol.DecodeFleetRequest(m.Data, protocol.Limits{})
			if err == nil {
				b, _ := json.Marshal(protocol.NewFleetReply(req.ID, "stranger-1", time.Now()))
				_ = m.Respond(b)
				_, _ = jsstore.Publish(context.Background(), js, protocol.HistorySubject(req.ID, "stranger-1"), protocol.HistoryMsgID(req.ID, "stranger-1"), nil, b)
			}
		})
		Expect(err).ToNot(HaveOccurred())
		Expect(nc.Flush()).To(Succeed())

		// With an hour to reply, only the last expected reply can end the run.
		code, doc := f.orchJSON("ensure", "exec", "/bin/true", "--where", "role=queue", "--where", "cpus=32", "--reply-timeout", "1h")
		Expect(code).To(Equal(0))
		Expect(doc["discovery"]).To(Equal("registry"))
		Expect(doc["replied"]).To(BeNumerically("==", len(identities(doc, "expected"))))
		Expect(doc["replied"]).To(BeNumerically(">", 0))
		Expect(identities(doc, "unexpected")).To(Equal([]string{"stranger-1"}))
		Eventually(func() []string {
			code, doc := f.orchJSON("history", "show", doc["request_id"].(string))
			Expect(code).To(Equal(0))
			return identities(doc, "unexpected")
		}).Should(Equal([]string{"stranger-1"}), "history keeps who answered unasked")
	})

	It("loses every agent once they stop", func() {
		// Stop the fleet now rather than at the end of the suite.
		f.stopAgents()
		Eventually(func() []string { return registryIdentities(f.url) }).WithTimeout(30 * time.Second).Should(BeEmpty())
	})
})

var _ = Describe("Discovery by registry over 10,000 entries", func() {
	It("lists and filters them in one read", func() {
		b := brokertest.Start(GinkgoT())
		nc, err := nats.Connect(b.ClientURL())
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(nc.Close)
		js, err := jetstream.New(nc)
		Expect(err).ToNot(HaveOccurred())
		ctx := context.Background()
		_, err = jsstore.EnsureRegistry(ctx, js, jsstore.RegistryConfig{TTL: time.Hour})
		Expect(err).ToNot(HaveOccurred())
		want := 0
		for i := range 10000 {
			if i%2 == 1 && i%64 >= 32 {
				want++ // os=rhel, cpus>=32
			}
			id := fmt.Sprintf("node-%05d", i)
			rec, _ := json.Marshal(&protocol.NodeRecord{Protocol: protocol.NodeProtocol, Identity: id, Version: "x",
				Facts: map[string]any{"identity": id, "os": []string{"debian", "rhel"}[i%2], "cpus": i % 64, "role": "web", "dc": "ams", "platform_version": "12.4"}})
			_, err := js.PublishAsync("$KV."+protocol.NodesBucket+"."+id, rec)
			Expect(err).ToNot(HaveOccurred())
		}
		Eventually(js.PublishAsyncComplete()).WithTimeout(60 * time.Second).Should(BeClosed())

		client := orchestrator.New(nc)
		started := time.Now()
		nodes, err := client.Discover(ctx, orchestrator.DiscoverOptions{Mode: orchestrator.DiscoveryRegistry, Filter: mustParse("os=rhel", "cpus>=32")})
		elapsed := time.Since(started)
		Expect(err).ToNot(HaveOccurred())
		Expect(nodes).To(HaveLen(want))
		AddReportEntry("registry discovery of 10,000 entries", elapsed.String())
		GinkgoWriter.Printf("registry discovery over 10,000 entries took %s\n", elapsed)
	})
})

func mustParse(terms ...string) *protocol.Filter {
	GinkgoHelper()
	f, err := protocol.ParseFilter(terms)
	Expect(err).ToNot(HaveOccurred())
	return f
}
