package agent

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/broker/brokertest"
	"github.com/ccm-fleet/ccm/jsstore"
	"github.com/ccm-fleet/ccm/protocol"
)

// burstJS is a JetStream under a burst of records: its first late
// publishes land but answer with a timeout, as a busy stream's late acks
// do. It counts the history stream's lookups and the reads of what the
// stream holds on a subject.
type burstJS struct {
	jetstream.JetStream
	late    atomic.Int32
	lookups atomic.Int32
	reads   atomic.Int32
}

func (j *burstJS) PublishMsg(ctx context.Context, m *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	ack, err := j.JetStream.PublishMsg(ctx, m, opts...)
	if err == nil && j.late.Add(-1) >= 0 {
		return nil, fmt.Errorf("publish %s: %w", m.Subject, context.DeadlineExceeded)
	}
	return ack, err
}

func (j *burstJS) Stream(ctx context.Context, name string) (jetstream.Stream, error) {
	j.lookups.Add(1)
	s, err := j.JetStream.Stream(ctx, name)
	if err != nil {
		return nil, err
	}
	return readCounter{Stream: s, reads: &j.reads}, nil
}

type readCounter struct {
	jetstream.Stream
	reads *atomic.Int32
}

func (s readCounter) GetLastMsgForSubject(ctx context.Context, subject string) (*jetstream.RawStreamMsg, error) {
	s.reads.Add(1)
	return s.Stream.GetLastMsgForSubject(ctx, subject)
}

var _ = Describe("history under a burst", func() {
	var (
		js    jetstream.JetStream
		burst *burstJS
		stats *Stats
		h     *history
		now   time.Time
	)
	BeforeEach(func() {
		b := brokertest.Start(GinkgoT())
		nc, err := nats.Connect(b.ClientURL())
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(nc.Close)
		js, err = jetstream.New(nc)
		Expect(err).ToNot(HaveOccurred())
		_, err = jsstore.EnsureHistory(context.Background(), js, jsstore.HistoryConfig{})
		Expect(err).ToNot(HaveOccurred())
		burst = &burstJS{JetStream: js}
		stats = &Stats{}
		now = time.Now()
		cfg := Config{Identity: "web-1", StateDir: GinkgoT().TempDir(), HistoryRetry: time.Hour, HistoryTimeout: time.Second,
			SpoolMaxRecords: 100, SpoolMaxBytes: 1 << 20, QueueLength: 8, MaxConcurrent: 1}
		h = newHistory(cfg, burst, "UPUB", stats, slog.New(slog.NewTextHandler(io.Discard, nil)), func() time.Time { return now })
	})
	rec := func(id string) record {
		return record{subject: protocol.HistorySubject(id, "web-1"), msgID: protocol.HistoryMsgID(id, "web-1"), header: nats.Header{}, data: []byte(`{"id":"` + id + `"}`)}
	}
	held := func(id string) uint64 {
		GinkgoHelper()
		s, err := js.Stream(context.Background(), protocol.HistoryStream)
		Expect(err).ToNot(HaveOccurred())
		subject := protocol.HistorySubject(id, "web-1")
		info, err := s.Info(context.Background(), jetstream.WithSubjectFilter(subject))
		Expect(err).ToNot(HaveOccurred())
		return info.State.Subjects[subject]
	}

	It("writes a record whose ack came late again at once, kept once, with no spool and no lookup", func() {
		burst.late.Store(1)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan struct{})
		go func() { defer close(done); h.run(ctx) }()
		h.add(rec("r1"))
		h.add(rec("r2"))
		h.close()
		Eventually(done).WithTimeout(10 * time.Second).Should(BeClosed())

		Expect(held("r1")).To(BeEquivalentTo(1), "the late write and its copy are one record")
		Expect(held("r2")).To(BeEquivalentTo(1))
		Expect(stats.recorded.Load()).To(BeEquivalentTo(2))
		Expect(stats.historyDuplicates.Load()).To(BeEquivalentTo(1), "the copy was a duplicate")
		Expect(stats.spooled.Load()).To(BeZero())
		Expect(h.spool.stats().Records).To(BeZero())
		Expect(burst.lookups.Load()).To(BeZero(), "no stream lookup for a late ack")
	})

	It("sends a spool with one stream lookup, reading the stream only for records kept past half the duplicate window", func() {
		// r1 and r2 landed before they were kept (their acks were lost),
		// r3 did not; r4 landed and was kept two hours ago, past the
		// window, under another message id as far as the stream knows.
		for _, id := range []string{"r1", "r2"} {
			_, err := jsstore.Publish(context.Background(), js, rec(id).subject, rec(id).msgID, nil, rec(id).data)
			Expect(err).ToNot(HaveOccurred())
		}
		_, err := jsstore.Publish(context.Background(), js, rec("r4").subject, "an-id-the-window-forgot", nil, rec("r4").data)
		Expect(err).ToNot(HaveOccurred())
		for _, id := range []string{"r1", "r2", "r3"} {
			h.keep(rec(id))
		}
		_, err = h.spool.add(spoolEntry{Subject: rec("r4").subject, MsgID: rec("r4").msgID, Data: rec("r4").data, Kept: now.Add(-2 * time.Hour)})
		Expect(err).ToNot(HaveOccurred())

		Expect(h.flush(context.Background())).To(BeTrue())
		Expect(burst.lookups.Load()).To(BeEquivalentTo(1))
		Expect(burst.reads.Load()).To(BeEquivalentTo(1), "only the record kept two hours ago was looked for")
		for _, id := range []string{"r1", "r2", "r3", "r4"} {
			Expect(held(id)).To(BeEquivalentTo(1), id)
		}
		Expect(stats.historyDuplicates.Load()).To(BeEquivalentTo(3), "r1 and r2 by their ids, r4 found in the stream")
		Expect(h.spool.stats().Records).To(BeZero())
	})

	It("spools a record whose second attempt is late too, and sends it later once, as a duplicate", func() {
		burst.late.Store(2)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan struct{})
		go func() { defer close(done); h.run(ctx) }()
		h.add(rec("r1"))
		h.close()
		Eventually(done).WithTimeout(10 * time.Second).Should(BeClosed())
		Expect(stats.spooled.Load()).To(BeEquivalentTo(1))
		Expect(h.spool.stats().Records).To(Equal(1))

		Expect(h.flush(context.Background())).To(BeTrue())
		Expect(h.spool.stats().Records).To(BeZero())
		Expect(held("r1")).To(BeEquivalentTo(1))
		Expect(stats.historyDuplicates.Load()).To(BeEquivalentTo(1))
		Expect(burst.reads.Load()).To(BeZero(), "a record kept a moment ago is not looked for")
	})
})
