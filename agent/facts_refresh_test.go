package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/agent"
	"github.com/ccm-fleet/ccm/broker/brokertest"
	"github.com/ccm-fleet/ccm/protocol"
)

// mutableFacts is a facts source whose facts a test changes.
type mutableFacts struct {
	mu    sync.Mutex
	facts map[string]any
	err   error
}

func (m *mutableFacts) set(k string, v any) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.facts[k] = v
}

func (m *mutableFacts) gather(context.Context) (map[string]any, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.facts), m.err
}

var _ = Describe("Facts refresh", func() {
	// answers reports whether the agent replies to a noop request on
	// subject within a short wait.
	answers := func(f *fixture, subject string) bool {
		req := ensureRequest(fmt.Sprintf("refresh-%d", time.Now().UnixNano()), time.Minute, "exec", map[string]any{"name": "/bin/true"})
		req.Noop = true
		b, err := json.Marshal(req)
		Expect(err).ToNot(HaveOccurred())
		_, err = f.nc.Request(subject, b, 300*time.Millisecond)
		return err == nil
	}

	It("moves the subscriptions and the registry entry when a subject fact changes", func() {
		src := &mutableFacts{facts: map[string]any{"os": "debian", "role": "web"}}
		f := startAgent(agent.Config{Identity: "mover-2", Heartbeat: time.Hour}, src.facts, agent.WithFactsSource(src.gather))
		Expect(answers(f, protocol.RequestFactSubject("role", "web"))).To(BeTrue())
		Expect(answers(f, protocol.RequestFactSubject("role", "db"))).To(BeFalse())

		src.set("role", "db")
		Expect(f.agent.RefreshFacts(context.Background())).To(Succeed())
		Eventually(func() bool { return answers(f, protocol.RequestFactSubject("role", "db")) }).WithTimeout(5 * time.Second).Should(BeTrue())
		Expect(answers(f, protocol.RequestFactSubject("role", "web"))).To(BeFalse(), "the old subject is left")
		Expect(answers(f, protocol.RequestNodeSubject("mover-2"))).To(BeTrue(), "the other subjects stay")
	})

	It("updates the registry entry with the new facts", func() {
		b := brokertest.Start(GinkgoT())
		f := startOn(b, true, agent.Config{Identity: "reg-1", Heartbeat: time.Hour}, map[string]any{"os": "debian", "role": "web"})
		kvFacts := func() any {
			kv, err := f.js.KeyValue(context.Background(), protocol.NodesBucket)
			if err != nil {
				return err
			}
			e, err := kv.Get(context.Background(), "reg-1")
			if errors.Is(err, jetstream.ErrKeyNotFound) || err != nil {
				return err
			}
			rec, err := protocol.DecodeNodeRecord(e.Value(), protocol.Limits{})
			if err != nil {
				return err
			}
			return rec.Facts["role"]
		}
		Eventually(kvFacts).Should(Equal("web"))
		f.agent.UpdateFacts(map[string]any{"os": "debian", "role": "db"})
		Eventually(kvFacts).WithTimeout(5 * time.Second).Should(Equal("db"))
	})

	It("keeps the facts it has when gathering fails", func() {
		src := &mutableFacts{facts: map[string]any{"os": "debian", "role": "web"}}
		f := startAgent(agent.Config{Identity: "keep-1"}, src.facts, agent.WithFactsSource(src.gather))
		src.mu.Lock()
		src.err = errors.New("gopsutil broke")
		src.mu.Unlock()
		Expect(f.agent.RefreshFacts(context.Background())).To(MatchError(ContainSubstring("gopsutil broke")))
		Expect(answers(f, protocol.RequestFactSubject("role", "web"))).To(BeTrue())
	})
})

var _ = Describe("Registration", func() {
	It("converges within seconds when the first puts fail, long before the next heartbeat", func() {
		b := brokertest.Start(GinkgoT())
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		Expect(b.RestartJetStream(ctx, false)).To(Succeed())
		f := startOn(b, false, agent.Config{Identity: "late-1", Heartbeat: 30 * time.Second, HistoryTimeout: time.Second}, map[string]any{"os": "debian"})
		Consistently(func() int64 { return f.agent.Stats().Heartbeats }).WithTimeout(1500*time.Millisecond).Should(BeZero(), "no JetStream, no entry")

		f.restart(true)
		Eventually(func() error {
			kv, err := f.js.KeyValue(ctx, protocol.NodesBucket)
			if err != nil {
				return err
			}
			_, err = kv.Get(ctx, "late-1")
			return err
		}).WithTimeout(10*time.Second).Should(Succeed(), "registered well before the 30s heartbeat")
	})
})
