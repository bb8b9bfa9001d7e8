package jsstore_test

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/broker"
	"github.com/ccm-fleet/ccm/broker/brokertest"
	"github.com/ccm-fleet/ccm/jsstore"
	"github.com/ccm-fleet/ccm/protocol"
)

// A reader's consumer lands on any of a replicated stream's servers, and a
// publish is acknowledged once a majority stored it: the third replica may
// not hold the newest record yet. Every read must still see every record
// acknowledged before it began.
var _ = Describe("Reading history kept by three servers", func() {
	It("sees every acknowledged record, whichever replica serves the read", func() {
		routes := make([]string, 3)
		for i := range routes {
			routes[i] = "nats-route://" + freeAddr()
		}
		var url string
		for i, r := range routes {
			b := brokertest.StartConfig(GinkgoT(), broker.Config{ServerName: fmt.Sprintf("h%d", i),
				Cluster: broker.ClusterConfig{Name: "hub", Listen: r[len("nats-route://"):], Routes: routes}})
			url = b.ClientURL()
		}
		nc, err := nats.Connect(url)
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(nc.Close)
		js, err := jetstream.New(nc)
		Expect(err).ToNot(HaveOccurred())
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		DeferCleanup(cancel)
		Eventually(func() error {
			actx, acancel := context.WithTimeout(ctx, 5*time.Second)
			defer acancel()
			_, err := jsstore.EnsureHistory(actx, js, jsstore.HistoryConfig{Replicas: 3})
			return err
		}).WithTimeout(60 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())

		// A stream just made elects its leader and takes its followers
		// on: publish once all three hold it.
		Eventually(func(g Gomega) {
			s, err := js.Stream(ctx, protocol.HistoryStream)
			g.Expect(err).ToNot(HaveOccurred())
			c := s.CachedInfo().Cluster
			g.Expect(c).ToNot(BeNil())
			g.Expect(c.Leader).ToNot(BeEmpty())
			g.Expect(c.Replicas).To(HaveLen(2))
			for _, p := range c.Replicas {
				g.Expect(p.Current).To(BeTrue())
			}
		}).WithTimeout(60 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
		const id = "11111111-2222-4333-8444-555555555555"
		for n := 1; n <= 60; n++ {
			host := fmt.Sprintf("host-%03d", n)
			_, err := jsstore.Publish(ctx, js, protocol.HistorySubject(id, host), protocol.HistoryMsgID(id, host), nil, []byte(`{}`))
			Expect(err).ToNot(HaveOccurred())
			seen := 0
			Expect(jsstore.Read(ctx, js, jsstore.ReadOptions{Filter: protocol.HistoryRunSubjects(id), Consistent: true}, func(jsstore.Record) error {
				seen++
				return nil
			})).To(Succeed())
			Expect(seen).To(Equal(n), "read %d began after record %d was acknowledged", n, n)
		}
	})
})

var _ = Describe("A consistent read", func() {
	It("is refused with a window, as it counts every record on its filter", func() {
		js := newJS()
		_, err := jsstore.EnsureHistory(context.Background(), js, jsstore.HistoryConfig{})
		Expect(err).ToNot(HaveOccurred())
		for _, opts := range []jsstore.ReadOptions{
			{Filter: protocol.HistorySubjects, Consistent: true, Since: time.Now().Add(-time.Hour)},
			{Filter: protocol.HistorySubjects, Consistent: true, StartSeq: 2},
		} {
			err := jsstore.Read(context.Background(), js, opts, func(jsstore.Record) error { return nil })
			Expect(err).To(MatchError(ContainSubstring("a consistent read counts every record on its filter, so it takes neither Since nor StartSeq")))
		}
	})
})

func freeAddr() string {
	GinkgoHelper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	defer l.Close()
	return l.Addr().String()
}
