package agent_test

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/agent"
	"github.com/ccm-fleet/ccm/broker/brokertest"
	"github.com/ccm-fleet/ccm/protocol"
)

var _ = Describe("An agent whose follow of the assignment store is refused", func() {
	It("tries again after a wait that doubles, one try at a time, not every retry", func() {
		dir := GinkgoT().TempDir()
		ops := newForwardKey()
		policy := writeOpsPolicy(dir, ops)
		b := brokertest.Start(GinkgoT())
		nc, err := nats.Connect(b.ClientURL())
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(nc.Close)
		js, err := jetstream.New(nc)
		Expect(err).ToNot(HaveOccurred())

		// A bucket as an older release made it (no republish), which the
		// agent follows with a watcher; it allows one consumer, held
		// already, so the server refuses every follow ("maximum consumers
		// limit reached").
		ctx := context.Background()
		stream, err := js.CreateStream(ctx, jetstream.StreamConfig{
			Name: "KV_" + protocol.AssignmentsBucket, Subjects: []string{"$KV." + protocol.AssignmentsBucket + ".>"},
			MaxMsgsPerSubject: 1, AllowRollup: true, DenyDelete: true, AllowDirect: true, Discard: jetstream.DiscardNew,
			MaxConsumers: 1,
		})
		Expect(err).ToNot(HaveOccurred())
		_, err = stream.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "held"})
		Expect(err).ToNot(HaveOccurred())

		// Each follow asks the server for one watcher: count them.
		var tries atomic.Int64
		sub, err := nc.Subscribe("$JS.API.CONSUMER.CREATE.KV_"+protocol.AssignmentsBucket+".>", func(*nats.Msg) { tries.Add(1) })
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(sub.Unsubscribe)
		Expect(nc.Flush()).To(Succeed())

		fa := &forwardAgent{b: b, facts: map[string]any{"os": "debian"},
			cfg: agent.Config{Identity: "refused-1", StateDir: filepath.Join(dir, "state"), Policy: policy, HistoryRetry: time.Second, ShutdownTimeout: 10 * time.Second}}
		started := time.Now()
		fa.start()

		// Doubling from 1 s, the fourth try comes after waits of at least
		// 1, 2 and 4 s: 7 s or more after the start. At a fixed 1 s
		// (splayed to 1.2 s) it would come within 3.6 s.
		Eventually(tries.Load).WithTimeout(20 * time.Second).WithPolling(10 * time.Millisecond).Should(BeNumerically(">=", 4))
		Expect(time.Since(started)).To(BeNumerically(">=", 7*time.Second), "the agent backs off while its follow is refused")
		Expect(tries.Load()).To(Equal(int64(4)), "one try at a time")
	})
})
