package orchestrator_test

import (
	"context"
	"encoding/json"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/orchestrator"
	"github.com/ccm-fleet/ccm/orchestrator/fleettest"
	"github.com/ccm-fleet/ccm/protocol"
)

var _ = Describe("BySite", func() {
	facts := map[string]map[string]any{
		"f1": {"site": "fra1"}, "f2": {"site": "fra1"}, "a1": {"site": "ams2"},
		"l1": {"site": "lon1"}, "p1": {"os": "debian"}, "n1": {"site": 7},
	}

	It("groups by site, the largest first, then by name, the hosts of no site last", func() {
		Expect(orchestrator.BySite([]string{"p1", "l1", "f2", "a1", "f1", "n1", "gone"}, facts)).To(Equal([]orchestrator.SiteHosts{
			{Site: "fra1", Count: 2, Hosts: []string{"f1", "f2"}},
			{Site: "ams2", Count: 1, Hosts: []string{"a1"}},
			{Site: "lon1", Count: 1, Hosts: []string{"l1"}},
			{Site: "", Count: 3, Hosts: []string{"gone", "n1", "p1"}},
		}))
	})

	It("groups hosts of no site even when only the replying hosts have one", func() {
		Expect(orchestrator.BySite([]string{"p1"}, facts)).To(Equal([]orchestrator.SiteHosts{{Site: "", Count: 1, Hosts: []string{"p1"}}}))
	})

	It("is nil when no host has a site, or nothing is listed", func() {
		Expect(orchestrator.BySite([]string{"p1"}, map[string]map[string]any{"p1": {"os": "debian"}})).To(BeNil())
		Expect(orchestrator.BySite([]string{"p1"}, nil)).To(BeNil())
		Expect(orchestrator.BySite(nil, facts)).To(BeNil())
	})
})

var _ = Describe("Run with hosts on sites", func() {
	It("groups the expected hosts that did not reply by their site as the registry knows it", func() {
		ctx := context.Background()
		fl := fleettest.StartWith(GinkgoT(), fleettest.Options{History: true}, 4, nil, "site=fra1,ams2")
		nc, err := nats.Connect(fl.URL())
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(nc.Close)
		js, err := jetstream.New(nc)
		Expect(err).NotTo(HaveOccurred())
		kv, err := js.KeyValue(ctx, protocol.NodesBucket)
		Expect(err).NotTo(HaveOccurred())
		// Registered hosts whose agents are gone, as when their site went
		// dark: two of ams2, one of lon1, one of no site.
		for id, site := range map[string]string{"dark-a1": "ams2", "dark-a2": "ams2", "dark-l1": "lon1", "dark-p1": ""} {
			facts := map[string]any{"identity": id}
			if site != "" {
				facts["site"] = site
			}
			rec, err := json.Marshal(protocol.NodeRecord{Protocol: protocol.NodeProtocol, Identity: id, Facts: facts, Started: time.Now(), LastSeen: time.Now()})
			Expect(err).NotTo(HaveOccurred())
			_, err = kv.Put(ctx, id, rec)
			Expect(err).NotTo(HaveOccurred())
		}

		client := orchestrator.New(nc)
		res, err := client.Run(ctx, orchestrator.Request{
			Ensure: ensureRequest("exec", map[string]any{"name": "/bin/true"}), Timeout: time.Second, Discovery: orchestrator.DiscoveryRegistry,
		})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Replied).To(Equal(4))
		Expect(res.NoReply).To(Equal([]string{"dark-a1", "dark-a2", "dark-l1", "dark-p1"}))
		Expect(res.NoReplyBySite).To(Equal([]orchestrator.SiteHosts{
			{Site: "ams2", Count: 2, Hosts: []string{"dark-a1", "dark-a2"}},
			{Site: "lon1", Count: 1, Hosts: []string{"dark-l1"}},
			{Site: "", Count: 1, Hosts: []string{"dark-p1"}},
		}))
		doc, err := json.Marshal(res)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(doc)).To(ContainSubstring(`"no_reply_by_site":[{"site":"ams2","count":2,"hosts":["dark-a1","dark-a2"]},{"site":"lon1","count":1,"hosts":["dark-l1"]},{"site":"","count":1,"hosts":["dark-p1"]}]`))

		res, err = client.Run(ctx, orchestrator.Request{
			Ensure: ensureRequest("exec", map[string]any{"name": "/bin/true"}), Filter: mustFilter([]string{"site=fra1"}, nil), Timeout: time.Second, Discovery: orchestrator.DiscoveryRegistry,
		})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Expected).To(Equal(identitiesWhere(fl, func(f map[string]any) bool { return f["site"] == "fra1" })))
		Expect(res.NoReplyBySite).To(BeNil(), "everyone replied")
		doc, err = json.Marshal(res)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(doc)).NotTo(ContainSubstring("no_reply_by_site"))
	})
})
