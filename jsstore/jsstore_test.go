package jsstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/broker/brokertest"
	"github.com/ccm-fleet/ccm/jsstore"
	"github.com/ccm-fleet/ccm/protocol"
)

func newJS() jetstream.JetStream {
	GinkgoHelper()
	b := brokertest.Start(GinkgoT())
	nc, err := nats.Connect(b.ClientURL())
	Expect(err).ToNot(HaveOccurred())
	DeferCleanup(nc.Close)
	js, err := jetstream.New(nc)
	Expect(err).ToNot(HaveOccurred())
	return js
}

var _ = Describe("HistoryConfig", func() {
	It("defaults to one replica, 30 days, no size limit, file storage and a one hour duplicate window", func() {
		c := jsstore.HistoryConfig{}.StreamConfig()
		Expect(c.Name).To(Equal("CCM_HISTORY"))
		Expect(c.Subjects).To(Equal([]string{"ccm.v1.history.>"}))
		Expect(c.Storage).To(Equal(jetstream.FileStorage))
		Expect(c.Replicas).To(Equal(1))
		Expect(c.MaxAge).To(Equal(30 * 24 * time.Hour))
		Expect(c.MaxBytes).To(BeEquivalentTo(-1))
		Expect(c.Duplicates).To(Equal(time.Hour))
		Expect(jsstore.HistoryConfig{MaxAge: 10 * time.Minute}.StreamConfig().Duplicates).To(Equal(10*time.Minute), "never longer than the retention")
	})

	DescribeTable("refuses what JetStream could not keep",
		func(c jsstore.HistoryConfig, problem string) {
			err := c.Validate()
			Expect(err).To(MatchError(jsstore.ErrInvalid))
			Expect(err.Error()).To(ContainSubstring(problem))
		},
		Entry("too many replicas", jsstore.HistoryConfig{Replicas: 7}, "replicas 7"),
		Entry("too short a retention", jsstore.HistoryConfig{MaxAge: time.Second}, "max age 1s"),
		Entry("too small a size", jsstore.HistoryConfig{MaxBytes: 1000}, "max bytes 1000"),
	)

	It("refuses a registry ttl under a second", func() {
		Expect(jsstore.RegistryConfig{TTL: time.Millisecond}.Validate()).To(MatchError(jsstore.ErrInvalid))
	})
})

var _ = Describe("History records", func() {
	It("creates and updates the stream, drops a record written twice with its id, and reads records back", func() {
		js := newJS()
		ctx := context.Background()
		info, err := jsstore.EnsureHistory(ctx, js, jsstore.HistoryConfig{})
		Expect(err).ToNot(HaveOccurred())
		Expect(info.Config.MaxAge).To(Equal(jsstore.DefaultHistoryMaxAge))
		info, err = jsstore.EnsureHistory(ctx, js, jsstore.HistoryConfig{MaxAge: 48 * time.Hour, MaxBytes: 1 << 30})
		Expect(err).ToNot(HaveOccurred())
		Expect(info.Config.MaxAge).To(Equal(48 * time.Hour))
		Expect(info.Config.MaxBytes).To(BeEquivalentTo(1 << 30))

		subject := protocol.HistorySubject("r1", "web.1")
		dup, err := jsstore.Publish(ctx, js, subject, protocol.HistoryMsgID("r1", "web.1"), nil, []byte("one"))
		Expect(err).ToNot(HaveOccurred())
		Expect(dup).To(BeFalse())
		dup, err = jsstore.Publish(ctx, js, subject, protocol.HistoryMsgID("r1", "web.1"), nil, []byte("one"))
		Expect(err).ToNot(HaveOccurred())
		Expect(dup).To(BeTrue())
		stream, err := js.Stream(ctx, protocol.HistoryStream)
		Expect(err).ToNot(HaveOccurred())
		Expect(jsstore.Recorded(ctx, stream, subject)).To(BeTrue())
		Expect(jsstore.Recorded(ctx, stream, protocol.HistorySubject("r1", "web-2"))).To(BeFalse())

		for i := range 2500 {
			h := nats.Header{}
			h.Set("X-N", fmt.Sprint(i))
			_, err := jsstore.Publish(ctx, js, protocol.HistorySubject("r2", fmt.Sprintf("h%d", i)), fmt.Sprint(i), h, []byte("x"))
			Expect(err).ToNot(HaveOccurred())
		}
		var got []jsstore.Record
		Expect(jsstore.Read(ctx, js, jsstore.ReadOptions{Filter: protocol.HistoryRunSubjects("r2"), HeadersOnly: true}, func(r jsstore.Record) error {
			got = append(got, r)
			return nil
		})).To(Succeed())
		Expect(got).To(HaveLen(2500))
		Expect(got[2499].Identity).To(Equal("h2499"))
		Expect(got[2499].Header.Get("X-N")).To(Equal("2499"))
		Expect(got[0].Data).To(BeEmpty(), "headers only")
		all := got

		got = nil
		Expect(jsstore.Read(ctx, js, jsstore.ReadOptions{Filter: protocol.HistoryRunSubjects("r1"), Since: time.Now().Add(time.Hour)}, func(r jsstore.Record) error {
			got = append(got, r)
			return nil
		})).To(Succeed())
		Expect(got).To(BeEmpty(), "nothing since a time to come")

		start := all[2000].Seq
		got = nil
		Expect(jsstore.Read(ctx, js, jsstore.ReadOptions{Filter: protocol.HistoryRunSubjects("r2"), StartSeq: start}, func(r jsstore.Record) error {
			got = append(got, r)
			return nil
		})).To(Succeed())
		Expect(got).To(HaveLen(500), "from a stream sequence on")
		Expect(got[0].Identity).To(Equal("h2000"))
		Expect(got[0].Seq).To(Equal(start))
	})

	It("says so when the stream does not exist", func() {
		js := newJS()
		err := jsstore.Read(context.Background(), js, jsstore.ReadOptions{Filter: protocol.HistorySubjects}, func(jsstore.Record) error { return nil })
		Expect(err).To(MatchError(jsstore.ErrNoHistory))
		Expect(err.Error()).To(ContainSubstring("ccm-orch history init"))
	})
})

var _ = Describe("The node registry", func() {
	It("is missing until created, then lists live entries and skips deleted and malformed ones", func() {
		js := newJS()
		ctx := context.Background()
		_, _, err := jsstore.ReadRegistry(ctx, js)
		Expect(err).To(MatchError(jsstore.ErrNoRegistry))
		Expect(jsstore.RegistryExists(ctx, js)).To(BeFalse())

		kv, err := jsstore.OpenRegistry(ctx, js, jsstore.RegistryConfig{TTL: time.Minute})
		Expect(err).ToNot(HaveOccurred())
		Expect(jsstore.RegistryExists(ctx, js)).To(BeTrue())
		kv2, err := jsstore.OpenRegistry(ctx, js, jsstore.RegistryConfig{TTL: time.Hour})
		Expect(err).ToNot(HaveOccurred())
		st, err := kv2.Status(ctx)
		Expect(err).ToNot(HaveOccurred())
		Expect(st.TTL()).To(Equal(time.Minute), "an existing bucket is used as it is")

		for _, id := range []string{"a1", "a2", "a3"} {
			b, _ := json.Marshal(&protocol.NodeRecord{Protocol: protocol.NodeProtocol, Identity: id, Facts: map[string]any{"os": "debian"}})
			_, err := kv.Put(ctx, id, b)
			Expect(err).ToNot(HaveOccurred())
		}
		Expect(kv.Delete(ctx, "a2")).To(Succeed())
		_, err = kv.Put(ctx, "bad", []byte(`{"protocol":"nope"}`))
		Expect(err).ToNot(HaveOccurred())

		nodes, malformed, err := jsstore.ReadRegistry(ctx, js)
		Expect(err).ToNot(HaveOccurred())
		Expect(malformed).To(Equal(1))
		var ids []string
		for _, n := range nodes {
			ids = append(ids, n.Identity)
		}
		Expect(ids).To(ConsistOf("a1", "a3"))

		_, err = jsstore.EnsureRegistry(ctx, js, jsstore.RegistryConfig{TTL: 2 * time.Minute})
		Expect(err).ToNot(HaveOccurred())
		st, err = kv.Status(ctx)
		Expect(err).ToNot(HaveOccurred())
		Expect(st.TTL()).To(Equal(2*time.Minute), "EnsureRegistry updates")
	})
})
