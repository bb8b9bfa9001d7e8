package agent_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/agent"
	"github.com/ccm-fleet/ccm/broker"
	"github.com/ccm-fleet/ccm/broker/brokertest"
	"github.com/ccm-fleet/ccm/protocol"
)

var _ = Describe("Site", func() {
	// entryFacts returns the facts of identity's registry entry, or the
	// error reading it.
	entryFacts := func(f *jsFixture, identity string) func() (map[string]any, error) {
		return func() (map[string]any, error) {
			kv, err := f.js.KeyValue(context.Background(), protocol.NodesBucket)
			if err != nil {
				return nil, err
			}
			e, err := kv.Get(context.Background(), identity)
			if err != nil {
				return nil, err
			}
			rec, err := protocol.DecodeNodeRecord(e.Value(), protocol.Limits{})
			if err != nil {
				return nil, err
			}
			return rec.Facts, nil
		}
	}

	It("announces the configured site in the registry entry and keeps it when the facts change", func() {
		b := brokertest.Start(GinkgoT())
		f := startOn(b, true, agent.Config{Identity: "site-1", Site: "fra1", Heartbeat: time.Hour}, map[string]any{"os": "debian", "role": "web"})
		Eventually(entryFacts(f, "site-1")).Should(HaveKeyWithValue("site", "fra1"))

		f.agent.UpdateFacts(map[string]any{"os": "debian", "role": "db", "site": "ams2"})
		Eventually(entryFacts(f, "site-1")).WithTimeout(5*time.Second).Should(And(HaveKeyWithValue("role", "db"), HaveKeyWithValue("site", "fra1")),
			"the configured site is kept like the identity")
	})

	It("has no site fact when none is configured", func() {
		b := brokertest.Start(GinkgoT())
		f := startOn(b, true, agent.Config{Identity: "site-2", Heartbeat: time.Hour}, map[string]any{"os": "debian"})
		Eventually(entryFacts(f, "site-2")).Should(HaveKeyWithValue("os", "debian"))
		Expect(entryFacts(f, "site-2")()).ToNot(HaveKey("site"))
	})

	It("takes the site from its broker's JetStream domain when neither the configuration nor the facts give one", func() {
		b := brokertest.StartConfig(GinkgoT(), broker.Config{Domain: "fra1"})
		f := startOn(b, true, agent.Config{Identity: "site-4", Heartbeat: time.Hour}, map[string]any{"os": "debian"})
		Eventually(entryFacts(f, "site-4")).Should(HaveKeyWithValue("site", "fra1"))

		f.agent.UpdateFacts(map[string]any{"os": "debian", "role": "db"})
		Eventually(entryFacts(f, "site-4")).WithTimeout(5*time.Second).Should(And(HaveKeyWithValue("role", "db"), HaveKeyWithValue("site", "fra1")),
			"kept when the facts change")
		f.agent.UpdateFacts(map[string]any{"os": "debian", "site": "ams2"})
		Eventually(entryFacts(f, "site-4")).WithTimeout(5*time.Second).Should(HaveKeyWithValue("site", "ams2"), "a site fact of the host's own wins")

		g := startOn(b, true, agent.Config{Identity: "site-5", Site: "par3", Heartbeat: time.Hour}, map[string]any{"os": "debian"})
		Eventually(entryFacts(g, "site-5")).Should(HaveKeyWithValue("site", "par3"), "the configured site wins")
	})

	It("takes no site from a broker whose domain is no site name", func() {
		b := brokertest.StartConfig(GinkgoT(), broker.Config{Domain: "_lab"})
		f := startOn(b, true, agent.Config{Identity: "site-6", Heartbeat: time.Hour}, map[string]any{"os": "debian"})
		Eventually(entryFacts(f, "site-6")).Should(HaveKeyWithValue("os", "debian"))
		Expect(entryFacts(f, "site-6")()).ToNot(HaveKey("site"))
	})

	It("refuses a site that is not a site name before it starts", func() {
		_, err := agent.New(agent.Config{Identity: "site-3", Site: "fra 1", StateDir: GinkgoT().TempDir()}, nil, nil, map[string]any{})
		Expect(err).To(MatchError(agent.ErrConfig))
		Expect(err).To(MatchError(protocol.ErrBadRequest))
		Expect(err.Error()).To(ContainSubstring(`site: bad_request: site name "fra 1": character at position 3 is not allowed`))
	})

	DescribeTable("ParseVary checks the site names it spreads",
		func(arg, problem string) {
			_, err := agent.ParseVary(arg)
			if problem == "" {
				Expect(err).ToNot(HaveOccurred())
				return
			}
			Expect(err).To(MatchError(agent.ErrConfig))
			Expect(err.Error()).To(ContainSubstring(problem))
		},
		Entry("valid sites", "site=fra1,ams2", ""),
		Entry("a site with a dot", "site=fra1,ams.2", `site name "ams.2"`),
		Entry("other facts are free text", "role=a.b,c d", ""),
	)
})
