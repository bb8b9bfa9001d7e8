package orchestrator

import (
	"time"

	"github.com/nats-io/nats.go"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/broker/brokertest"
)

var _ = Describe("A drained inbox", func() {
	It("is not drained while a received reply waits in the subscription, and is once it was taken", func() {
		b := brokertest.Start(GinkgoT())
		nc, err := nats.Connect(b.ClientURL())
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(nc.Close)
		in, err := openInbox(nc, nil)
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

		// A reply received and still being verified is not drained either.
		in.pending.Add(1)
		Expect(in.drained(nc, time.Second)).To(BeFalse())
		in.pending.Add(-1)
		Expect(in.drained(nc, time.Second)).To(BeTrue())
	})
})
