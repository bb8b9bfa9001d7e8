package agent

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/broker/brokertest"
	"github.com/ccm-fleet/ccm/jsstore"
	"github.com/ccm-fleet/ccm/protocol"
)

var _ = Describe("The assignment feed", func() {
	var (
		nc     *nats.Conn
		js     jetstream.JetStream
		kv     jetstream.KeyValue
		stream jetstream.Stream
		ctx    context.Context
	)
	BeforeEach(func() {
		b := brokertest.Start(GinkgoT())
		var err error
		nc, err = nats.Connect(b.ClientURL())
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(nc.Close)
		js, err = jetstream.New(nc)
		Expect(err).ToNot(HaveOccurred())
		ctx = context.Background()
		kv, err = jsstore.EnsureAssignments(ctx, js, jsstore.AssignmentsConfig{})
		Expect(err).ToNot(HaveOccurred())
		stream, err = js.Stream(ctx, "KV_"+protocol.AssignmentsBucket)
		Expect(err).ToNot(HaveOccurred())
	})

	// feed starts a feed on the bucket; the test sees its entries.
	feed := func(tweak func(*assignFeed)) *assignFeed {
		GinkgoHelper()
		f, err := newFeed(nc, slog.New(slog.DiscardHandler))
		Expect(err).ToNot(HaveOccurred())
		if tweak != nil {
			tweak(f)
		}
		f.start(ctx)
		DeferCleanup(f.Stop)
		return f
	}
	type seen struct {
		Key string
		Rev uint64
		Op  jetstream.KeyValueOp
		Val string
	}
	// next is the feed's next entry (nil for the end of the current
	// values).
	next := func(f *assignFeed) *seen {
		GinkgoHelper()
		var e jetstream.KeyValueEntry
		Eventually(f.Updates()).WithTimeout(10 * time.Second).Should(Receive(&e))
		if e == nil {
			return nil
		}
		Expect(e.Bucket()).To(Equal(protocol.AssignmentsBucket))
		return &seen{e.Key(), e.Revision(), e.Operation(), string(e.Value())}
	}
	put := func(key, value string) uint64 {
		GinkgoHelper()
		rev, err := kv.Put(ctx, key, []byte(value))
		Expect(err).ToNot(HaveOccurred())
		return rev
	}

	It("is what the fleet's bucket is provisioned for, and a bucket without the republish is not", func() {
		Expect(feedEnabled(stream.CachedInfo())).To(BeTrue())
		plain, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "PLAIN"})
		Expect(err).ToNot(HaveOccurred())
		s, err := js.Stream(ctx, "KV_PLAIN")
		Expect(err).ToNot(HaveOccurred())
		Expect(feedEnabled(s.CachedInfo())).To(BeFalse())
		_ = plain
	})

	It("delivers every key's current entry in revision order, then the changes, and holds no consumer", func() {
		put("web", "one")
		r2 := put("db", "two")
		r3 := put("web", "three")
		Expect(kv.Delete(ctx, "gone-soon")).To(Succeed()) // a key that never held a value
		r4, err := kv.Create(ctx, "gone", []byte("x"))
		Expect(err).ToNot(HaveOccurred())
		Expect(kv.Delete(ctx, "gone")).To(Succeed())

		f := feed(nil)
		got := []*seen{next(f), next(f), next(f), next(f)}
		Expect(got).To(Equal([]*seen{
			{"db", r2, jetstream.KeyValuePut, "two"},
			{"web", r3, jetstream.KeyValuePut, "three"},
			{"gone-soon", r3 + 1, jetstream.KeyValueDelete, ""},
			{"gone", r4 + 1, jetstream.KeyValueDelete, ""},
		}))
		Expect(next(f)).To(BeNil(), "the end of the current values")

		r7 := put("web", "four")
		Expect(next(f)).To(Equal(&seen{"web", r7, jetstream.KeyValuePut, "four"}))
		Expect(kv.Purge(ctx, "db")).To(Succeed())
		Expect(next(f)).To(Equal(&seen{"db", r7 + 1, jetstream.KeyValuePurge, ""}))

		info, err := stream.Info(ctx)
		Expect(err).ToNot(HaveOccurred())
		Expect(info.State.Consumers).To(Equal(0), "following the bucket costs the broker no consumer")
	})

	It("ignores what the stream did not send and what it already delivered", func() {
		put("web", "one")
		f := feed(nil)
		Expect(next(f)).To(Equal(&seen{"web", 1, jetstream.KeyValuePut, "one"}))
		Expect(next(f)).To(BeNil())

		forge := func(h nats.Header) {
			GinkgoHelper()
			Expect(nc.PublishMsg(&nats.Msg{Subject: "ccm.v1.assignments.web", Header: h, Data: []byte("forged")})).To(Succeed())
		}
		forge(nil)
		forge(nats.Header{"Nats-Stream": {"KV_OTHER"}, "Nats-Subject": {"$KV.CCM_ASSIGNMENTS.web"}, "Nats-Sequence": {"9"}})
		forge(nats.Header{"Nats-Stream": {"KV_CCM_ASSIGNMENTS"}, "Nats-Subject": {"$KV.OTHER.web"}, "Nats-Sequence": {"9"}})
		forge(nats.Header{"Nats-Stream": {"KV_CCM_ASSIGNMENTS"}, "Nats-Subject": {"$KV.CCM_ASSIGNMENTS.web"}, "Nats-Sequence": {"x"}})
		// a replay of revision 1: already delivered
		forge(nats.Header{"Nats-Stream": {"KV_CCM_ASSIGNMENTS"}, "Nats-Subject": {"$KV.CCM_ASSIGNMENTS.web"}, "Nats-Sequence": {"1"}})
		Consistently(f.Updates()).WithTimeout(500 * time.Millisecond).ShouldNot(Receive())

		rev := put("web", "two")
		Expect(next(f)).To(Equal(&seen{"web", rev, jetstream.KeyValuePut, "two"}))
	})

	It("ends a burst it could not keep up with on every key's last revision", func() {
		f := feed(nil)
		Expect(next(f)).To(BeNil())
		// Nobody takes the updates while 400 changes arrive: both buffers
		// fill and changes are dropped.
		last := map[string]uint64{}
		for i := range 400 {
			key := fmt.Sprintf("a%d", i%5)
			last[key] = put(key, fmt.Sprint(i))
		}
		got := map[string]uint64{}
		Eventually(func() map[string]uint64 {
			for {
				select {
				case e := <-f.Updates():
					Expect(e.Revision()).To(BeNumerically(">", got[e.Key()]), "revisions of a key only move forward")
					got[e.Key()] = e.Revision()
				default:
					return got
				}
			}
		}).WithTimeout(10 * time.Second).Should(Equal(last))
		Expect(f.reads.Load()).To(BeNumerically(">=", 2), "the overflow was answered by reading the bucket again")
	})

	It("finds a change whose message was lost by looking at the stream's last sequence", func() {
		f := feed(func(f *assignFeed) { f.checkEvery = 200 * time.Millisecond })
		Expect(next(f)).To(BeNil())
		// The subscription goes away: the next change is never delivered.
		Expect(f.sub.Unsubscribe()).To(Succeed())
		Expect(nc.Flush()).To(Succeed())
		rev := put("web", "missed")
		Expect(next(f)).To(Equal(&seen{"web", rev, jetstream.KeyValuePut, "missed"}))
		Expect(f.reads.Load()).To(Equal(int64(2)))
	})

	It("reads the bucket again when the connection comes back", func() {
		f := feed(nil)
		Expect(next(f)).To(BeNil())
		Expect(f.sub.Unsubscribe()).To(Succeed())
		Expect(nc.Flush()).To(Succeed())
		rev := put("web", "while away")
		Consistently(f.Updates()).WithTimeout(300 * time.Millisecond).ShouldNot(Receive())
		f.status <- nats.CONNECTED
		Expect(next(f)).To(Equal(&seen{"web", rev, jetstream.KeyValuePut, "while away"}))
		Expect(f.reads.Load()).To(Equal(int64(2)))
	})
})
