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
	It("numbers its agents from First, so several simulations make one fleet", func() {
		b := brokertest.Start(GinkgoT())
		reg, err := providers.Builtin(providers.Options{})
		Expect(err).ToNot(HaveOccurred())
		ctx, cancel := context.WithCancel(context.Background())
		ready, done := make(chan struct{}), make(chan error, 1)
		sim := agent.Simulation{
			Count: 3, First: 4998, Prefix: "part", Engine: engine.New(reg),
			Config: agent.Config{StateDir: GinkgoT().TempDir(), Insecure: true},
			Connect: func(_ context.Context, name string) (*nats.Conn, error) {
				return nats.Connect(b.ClientURL(), nats.Name(name))
			},
			Ready: func() { close(ready) },
		}
		go func() { done <- sim.Run(ctx) }()
		DeferCleanup(func() { cancel(); Eventually(done).WithTimeout(30 * time.Second).Should(Receive()) })
		Eventually(ready).WithTimeout(30 * time.Second).Should(BeClosed())

		nc, err := nats.Connect(b.ClientURL())
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(nc.Close)
		inbox := nc.NewInbox()
		sub, err := nc.SubscribeSync(inbox)
		Expect(err).ToNot(HaveOccurred())
		data, err := json.Marshal(protocol.NewDiscoveryRequest("simfirst0123456789ab", nil))
		Expect(err).ToNot(HaveOccurred())
		Expect(nc.PublishRequest(protocol.DiscoverySubjectAll, inbox, data)).To(Succeed())
		var ids []string
		for len(ids) < 3 {
			m, err := sub.NextMsg(10 * time.Second)
			Expect(err).ToNot(HaveOccurred())
			r, err := protocol.DecodeDiscoveryReply(m.Data, protocol.Limits{})
			Expect(err).ToNot(HaveOccurred())
			ids = append(ids, r.Identity)
		}
		slices.Sort(ids)
		Expect(ids).To(Equal([]string{"part-4999", "part-5000", "part-5001"}))
	})

	It("serves more agents than it starts at once: each one that serves lets the next start", func() {
		b := brokertest.Start(GinkgoT())
		reg, err := providers.Builtin(providers.Options{})
		Expect(err).ToNot(HaveOccurred())
		ctx, cancel := context.WithCancel(context.Background())
		ready, done := make(chan struct{}), make(chan error, 1)
		const count = 300 // above the 256 that start at once
		sim := agent.Simulation{
			Count: count, Prefix: "gate", Engine: engine.New(reg),
			Config: agent.Config{StateDir: GinkgoT().TempDir(), Insecure: true},
			Connect: func(_ context.Context, name string) (*nats.Conn, error) {
				return nats.Connect(b.ClientURL(), nats.Name(name))
			},
			Ready: func() { close(ready) },
		}
		go func() { done <- sim.Run(ctx) }()
		DeferCleanup(func() { cancel(); Eventually(done).WithTimeout(60 * time.Second).Should(Receive()) })
		Eventually(ready).WithTimeout(2 * time.Minute).Should(BeClosed())

		nc, err := nats.Connect(b.ClientURL())
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(nc.Close)
		inbox := nc.NewInbox()
		sub, err := nc.SubscribeSync(inbox)
		Expect(err).ToNot(HaveOccurred())
		Expect(sub.SetPendingLimits(-1, -1)).To(Succeed())
		data, err := json.Marshal(protocol.NewDiscoveryRequest("simgate0123456789abc", nil))
		Expect(err).ToNot(HaveOccurred())
		Expect(nc.PublishRequest(protocol.DiscoverySubjectAll, inbox, data)).To(Succeed())
		seen := map[string]bool{}
		for len(seen) < count {
			m, err := sub.NextMsg(10 * time.Second)
			Expect(err).ToNot(HaveOccurred(), "%d of %d agents answered", len(seen), count)
			r, err := protocol.DecodeDiscoveryReply(m.Data, protocol.Limits{})
			Expect(err).ToNot(HaveOccurred())
			seen[r.Identity] = true
		}
		Expect(seen).To(HaveKey("gate-0300"))
	})

	It("refuses a negative first agent", func() {
		err := agent.Simulation{Count: 1, First: -1}.Run(context.Background())
		Expect(err).To(MatchError(agent.ErrConfig))
		Expect(err).To(MatchError(ContainSubstring("first agent 0")))
	})
})
