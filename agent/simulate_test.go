package agent_test

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/agent"
	"github.com/ccm-fleet/ccm/broker/brokertest"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/providers"
	"github.com/ccm-fleet/ccm/resources/engine"
)

var _ = Describe("Simulation", func() {
	// simulate runs count agents numbered from first on a broker of
	// their own until the spec ends, and returns the broker's URL once
	// every agent serves.
	simulate := func(count, first int, prefix string) string {
		GinkgoHelper()
		b := brokertest.Start(GinkgoT())
		reg, err := providers.Builtin(providers.Options{})
		Expect(err).ToNot(HaveOccurred())
		ctx, cancel := context.WithCancel(context.Background())
		ready, done := make(chan struct{}), make(chan error, 1)
		sim := agent.Simulation{
			Count: count, First: first, Prefix: prefix, Engine: engine.New(reg),
			Config: agent.Config{StateDir: GinkgoT().TempDir(), Insecure: true},
			Connect: func(_ context.Context, name string) (*nats.Conn, error) {
				return nats.Connect(b.ClientURL(), nats.Name(name))
			},
			Ready: func() { close(ready) },
		}
		go func() { done <- sim.Run(ctx) }()
		DeferCleanup(func() { cancel(); Eventually(done).WithTimeout(60 * time.Second).Should(Receive()) })
		Eventually(ready).WithTimeout(2 * time.Minute).Should(BeClosed())
		return b.ClientURL()
	}

	// discover is the identities of the n agents that answer a
	// discovery request at url.
	discover := func(url string, n int) []string {
		GinkgoHelper()
		nc, err := nats.Connect(url)
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(nc.Close)
		inbox := nc.NewInbox()
		sub, err := nc.SubscribeSync(inbox)
		Expect(err).ToNot(HaveOccurred())
		Expect(sub.SetPendingLimits(-1, -1)).To(Succeed())
		data, err := json.Marshal(protocol.NewDiscoveryRequest("simdisc0123456789abc", nil))
		Expect(err).ToNot(HaveOccurred())
		Expect(nc.PublishRequest(protocol.DiscoverySubjectAll, inbox, data)).To(Succeed())
		var ids []string
		for len(ids) < n {
			m, err := sub.NextMsg(10 * time.Second)
			Expect(err).ToNot(HaveOccurred(), "%d of %d agents answered", len(ids), n)
			r, err := protocol.DecodeDiscoveryReply(m.Data, protocol.Limits{})
			Expect(err).ToNot(HaveOccurred())
			ids = append(ids, r.Identity)
		}
		slices.Sort(ids)
		return ids
	}

	It("numbers its agents from First, so several simulations make one fleet", func() {
		url := simulate(3, 4998, "part")
		Expect(discover(url, 3)).To(Equal([]string{"part-4999", "part-5000", "part-5001"}))
	})

	It("serves more agents than it starts at once: each one that serves lets the next start", func() {
		const count = 300 // above the 256 that start at once
		ids := discover(simulate(count, 0, "gate"), count)
		Expect(slices.Compact(ids)).To(HaveLen(count))
		Expect(ids[0]).To(Equal("gate-0001"))
		Expect(ids[count-1]).To(Equal("gate-0300"))
	})

	It("refuses a negative first agent", func() {
		err := agent.Simulation{Count: 1, First: -1}.Run(context.Background())
		Expect(err).To(MatchError(agent.ErrConfig))
		Expect(err).To(MatchError(ContainSubstring("first agent 0")))
	})
})
