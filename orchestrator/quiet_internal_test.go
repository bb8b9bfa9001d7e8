package orchestrator

import (
	"time"

	"github.com/nats-io/nats.go"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/broker/brokertest"
)

var _ = Describe("A discovery round's quiet window", func() {
	const quiet = 300 * time.Millisecond

	It("is quiet when nothing was received", func() {
		Expect((&inbox{}).quietFor(quiet)).To(BeZero())
	})

	It("is not quiet while received replies wait to be verified, however old", func() {
		in := &inbox{}
		in.arrived.Store(time.Now().Add(-time.Hour).UnixNano())
		in.pending.Add(1)
		Expect(in.quietFor(quiet)).To(Equal(quiet))
		in.pending.Add(-1)
		Expect(in.quietFor(quiet)).To(BeZero())
	})

	It("waits out the rest of the window after the last arrival", func() {
		in := &inbox{}
		in.arrived.Store(time.Now().Add(-100 * time.Millisecond).UnixNano())
		wait := in.quietFor(quiet)
		Expect(wait).To(BeNumerically(">", 0))
		Expect(wait).To(BeNumerically("<=", 200*time.Millisecond))
	})
})

var _ = Describe("A drained inbox", func() {
	It("is not drained while a received reply waits in the subscription, and is once it was taken", func() {
		b := brokertest.Start(GinkgoT())
		nc, err := nats.Connect(b.ClientURL())
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(nc.Close)
		in, err := openInbox(nc)
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(in.close)
		Expect(in.drained(nc, time.Second)).To(BeTrue(), "nothing was sent")

		pub, err := nats.Connect(b.ClientURL())
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(pub.Close)
		Expect(pub.Publish(in.subject, []byte(`{}`))).To(Succeed())
		Expect(pub.Flush()).To(Succeed())
		// The reply is received (a round trip of the inbox's connection
		// reads it) and waits until someone takes it from the inbox.
		Expect(in.drained(nc, time.Second)).To(BeFalse())
		Eventually(in.ch).WithTimeout(5 * time.Second).Should(Receive())
		Expect(in.drained(nc, time.Second)).To(BeTrue())
	})
})
