package natsconn_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/broker/brokertest"
	"github.com/ccm-fleet/ccm/natsconn"
)

var _ = Describe("InboxPrefix", func() {
	var ctx context.Context
	BeforeEach(func() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.Background(), time.Minute)
		DeferCleanup(cancel)
		useConfigHome()
	})

	It("puts the connection's reply subjects under the prefix", func() {
		b := brokertest.Start(GinkgoT())
		nc, err := natsconn.Connect(ctx, natsconn.Options{Servers: b.ClientURL(), InboxPrefix: "_INBOX.agent-web1"})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(nc.Close)
		Expect(nc.NewRespInbox()).To(HavePrefix("_INBOX.agent-web1."))
		Expect(nc.NewInbox()).To(HavePrefix("_INBOX.agent-web1."))
	})

	DescribeTable("refuses a prefix that is not a literal subject",
		func(prefix string) {
			_, err := natsconn.Connect(ctx, natsconn.Options{Servers: "nats://127.0.0.1:1", InboxPrefix: prefix})
			Expect(err).To(MatchError(natsconn.ErrOptions))
			Expect(err.Error()).To(ContainSubstring(prefix))
		},
		Entry("wildcard", "_INBOX.*"),
		Entry("full wildcard", "_INBOX.>"),
		Entry("trailing dot", "_INBOX.agent."),
		Entry("space", "_INBOX.agent web"),
	)
})
