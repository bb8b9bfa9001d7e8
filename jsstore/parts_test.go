package jsstore_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/jsstore"
	"github.com/ccm-fleet/ccm/protocol"
)

var _ = Describe("History records larger than one message", func() {
	var (
		ctx   context.Context
		js    jetstream.JetStream
		large []byte
	)
	const subject = "ccm.v1.history.req-big.web1"
	BeforeEach(func() {
		ctx = context.Background()
		js = newJS()
		_, err := jsstore.EnsureHistory(ctx, js, jsstore.HistoryConfig{})
		Expect(err).NotTo(HaveOccurred())
		// Three and a half messages of the server's max payload, hex so
		// that it is printable like a reply.
		raw := make([]byte, int(js.Conn().MaxPayload())*7/4)
		_, _ = rand.Read(raw)
		large = []byte(hex.EncodeToString(raw))
	})

	readAll := func(filter string, headersOnly bool) []jsstore.Record {
		var out []jsstore.Record
		Expect(jsstore.Read(ctx, js, jsstore.ReadOptions{Filter: filter, HeadersOnly: headersOnly}, func(r jsstore.Record) error {
			out = append(out, r)
			return nil
		})).To(Succeed())
		return out
	}

	It("are written in parts and read back whole, with their headers, by every reader", func() {
		h := nats.Header{}
		h.Set(protocol.HeaderSigner, "UKEY")
		dup, err := jsstore.Publish(ctx, js, subject, "req-big/web1", h, large)
		Expect(err).NotTo(HaveOccurred())
		Expect(dup).To(BeFalse())

		s, err := js.Stream(ctx, protocol.HistoryStream)
		Expect(err).NotTo(HaveOccurred())
		info, err := s.Info(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(info.State.Msgs).To(BeEquivalentTo(4), "four messages, none larger than the max payload")

		recs := readAll(protocol.HistorySubjects, false)
		Expect(recs).To(HaveLen(1), "the parts are not records of their own")
		Expect(recs[0].Err).NotTo(HaveOccurred())
		Expect(recs[0].Subject).To(Equal(subject))
		Expect(recs[0].Identity).To(Equal("web1"))
		Expect(recs[0].Header.Get(protocol.HeaderSigner)).To(Equal("UKEY"))
		Expect(bytes.Equal(recs[0].Data, large)).To(BeTrue())

		Expect(readAll(protocol.HistoryRunSubjects("req-big"), false)[0].Data).To(HaveLen(len(large)))
		Expect(readAll(protocol.HistorySubjectPrefix+".*.web1", true)).To(HaveLen(1))

		got, err := jsstore.Get(ctx, js, subject)
		Expect(err).NotTo(HaveOccurred())
		Expect(bytes.Equal(got.Data, large)).To(BeTrue())

		stream, err := js.Stream(ctx, protocol.HistoryStream)
		Expect(err).NotTo(HaveOccurred())
		done, err := jsstore.Recorded(ctx, stream, subject)
		Expect(err).NotTo(HaveOccurred())
		Expect(done).To(BeTrue())

		dup, err = jsstore.Publish(ctx, js, subject, "req-big/web1", h, large)
		Expect(err).NotTo(HaveOccurred())
		Expect(dup).To(BeTrue(), "written again, it is recognised")
		Expect(readAll(protocol.HistorySubjects, false)).To(HaveLen(1))
	})

	It("report a missing part as an incomplete record instead of dropping it", func() {
		_, err := jsstore.Publish(ctx, js, subject, "req-big/web1", nats.Header{}, large)
		Expect(err).NotTo(HaveOccurred())
		s, err := js.Stream(ctx, protocol.HistoryStream)
		Expect(err).NotTo(HaveOccurred())
		Expect(s.Purge(ctx, jetstream.WithPurgeSubject(protocol.HistoryPartSubject("req-big", "web1", 2)))).To(Succeed())

		recs := readAll(protocol.HistorySubjects, false)
		Expect(recs).To(HaveLen(1))
		Expect(recs[0].Data).To(BeNil())
		Expect(recs[0].Err).To(MatchError(protocol.ErrIncomplete))
		Expect(recs[0].Err).To(MatchError(ContainSubstring("part 2 of 4 is not in the stream")))

		got, err := jsstore.Get(ctx, js, subject)
		Expect(err).NotTo(HaveOccurred())
		Expect(got.Err).To(MatchError(protocol.ErrIncomplete))
	})

	It("report a part that does not match the record's digest", func() {
		_, err := jsstore.Publish(ctx, js, subject, "req-big/web1", nats.Header{}, large)
		Expect(err).NotTo(HaveOccurred())
		// Someone who can write the host's subjects replaces part 3.
		s, err := js.Stream(ctx, protocol.HistoryStream)
		Expect(err).NotTo(HaveOccurred())
		m, err := s.GetLastMsgForSubject(ctx, protocol.HistoryPartSubject("req-big", "web1", 3))
		Expect(err).NotTo(HaveOccurred())
		forged := bytes.Clone(m.Data)
		forged[0] ^= 1
		h := nats.Header{}
		for k, v := range (protocol.PartInfo{Index: 3, Count: 4, Size: len(large), Digest: protocol.Digest(large)}).Headers() {
			h[k] = v
		}
		_, err = js.PublishMsg(ctx, &nats.Msg{Subject: m.Subject, Header: h, Data: forged})
		Expect(err).NotTo(HaveOccurred())

		recs := readAll(protocol.HistorySubjects, false)
		Expect(recs).To(HaveLen(1))
		Expect(recs[0].Err).To(MatchError(ContainSubstring("digest")))
	})

	It("keep a record that fits in one message as it was", func() {
		_, err := jsstore.Publish(ctx, js, subject, "req-big/web1", nats.Header{}, []byte(`{"small":true}`))
		Expect(err).NotTo(HaveOccurred())
		recs := readAll(protocol.HistorySubjects, false)
		Expect(recs).To(HaveLen(1))
		Expect(recs[0].Header.Get(protocol.HeaderParts)).To(BeEmpty())
		Expect(string(recs[0].Data)).To(Equal(`{"small":true}`))
	})
})
