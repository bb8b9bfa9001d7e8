package agent

import (
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/broker/brokertest"
)

var _ = Describe("The dispatcher's count of messages NATS dropped", func() {
	It("counts every drop of each flood that fills the subscriptions, though it only looks after seeing them full", func() {
		b := brokertest.Start(GinkgoT())
		// The drops are the point: no "slow consumer" line on stderr.
		nc, err := nats.Connect(b.ClientURL(), nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(nc.Close)
		pub, err := nats.Connect(b.ClientURL())
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(pub.Close)

		var handled atomic.Int64
		entered, release := make(chan struct{}), make(chan struct{})
		stats := &Stats{}
		d := &dispatcher{
			request: func(m *nats.Msg) {
				handled.Add(1)
				if string(m.Data) == "block" {
					entered <- struct{}{}
					<-release
				}
			},
			stats: stats, log: slog.New(slog.DiscardHandler),
		}
		msgs := make(chan *nats.Msg, subscriptionBuffer)
		subs := newSubscriptions(nc, msgs)
		_, _, err = subs.sync([]string{"drop.test"})
		Expect(err).ToNot(HaveOccurred())
		Expect(nc.Flush()).To(Succeed())
		stop, done := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(done)
			d.run(msgs, subs, stop)
		}()
		DeferCleanup(func() { close(stop); <-done })

		droppedByNATS := func() (n int) {
			for _, s := range subs.list() {
				c, err := s.Dropped()
				Expect(err).ToNot(HaveOccurred())
				n += c
			}
			return n
		}
		const extra = 500
		for round := 1; round <= 2; round++ {
			// The dispatcher is held in one admission while a flood
			// arrives: the subscriptions hold subscriptionBuffer of it
			// and NATS drops the rest.
			Expect(pub.Publish("drop.test", []byte("block"))).To(Succeed())
			Expect(pub.Flush()).To(Succeed())
			Eventually(entered).WithTimeout(5 * time.Second).Should(Receive())
			for range subscriptionBuffer + extra {
				Expect(pub.Publish("drop.test", []byte("flood"))).To(Succeed())
			}
			Expect(pub.Flush()).To(Succeed())
			Eventually(droppedByNATS).WithTimeout(10*time.Second).Should(Equal(round*extra), "round %d", round)
			Expect(stats.dropped.Load()).To(Equal(int64((round-1)*extra)), "round %d: not counted while the dispatcher is held", round)

			release <- struct{}{}
			Eventually(stats.dropped.Load).WithTimeout(dropCheckInterval+5*time.Second).Should(Equal(int64(round*extra)), "round %d", round)
			Expect(handled.Load()).To(Equal(int64(round*(1+subscriptionBuffer))), "round %d: every message the subscriptions held was handled", round)
		}
	})
})
