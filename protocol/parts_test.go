package protocol_test

import (
	"bytes"
	"crypto/rand"
	"errors"
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/protocol"
)

var _ = Describe("documents sent in parts", func() {
	const partBytes = protocol.MinPartBytes
	var whole []byte
	BeforeEach(func() {
		whole = make([]byte, 5*partBytes+123)
		_, _ = rand.Read(whole)
	})

	headerOf := func(p protocol.Part) http.Header {
		h := http.Header{}
		for k, v := range p.Headers() {
			h[k] = v
		}
		return h
	}
	join := func(parts []protocol.Part) ([]byte, error) {
		a, err := protocol.NewAssembly(parts[0].PartInfo)
		Expect(err).NotTo(HaveOccurred())
		for _, p := range parts {
			if _, err := a.Add(p.PartInfo, p.Data); err != nil {
				return nil, err
			}
		}
		return a.Whole()
	}

	It("cuts a document into ordered parts that carry its size and digest", func() {
		parts, err := protocol.Split(whole, partBytes)
		Expect(err).NotTo(HaveOccurred())
		Expect(parts).To(HaveLen(6))
		var joined []byte
		for i, p := range parts {
			Expect(p.Index).To(Equal(i + 1))
			Expect(p.Count).To(Equal(6))
			Expect(p.Size).To(Equal(len(whole)))
			Expect(p.Digest).To(Equal(protocol.Digest(whole)))
			Expect(len(p.Data)).To(BeNumerically("<=", partBytes))
			joined = append(joined, p.Data...)
		}
		Expect(joined).To(Equal(whole))
		Expect(parts[5].Data).To(HaveLen(123))
	})

	It("reads back the headers it writes and tells a part from a plain message", func() {
		parts, err := protocol.Split(whole, partBytes)
		Expect(err).NotTo(HaveOccurred())
		info, ok, err := protocol.ParsePartInfo(headerOf(parts[2]).Get)
		Expect(err).NotTo(HaveOccurred())
		Expect(ok).To(BeTrue())
		Expect(info).To(Equal(parts[2].PartInfo))

		_, ok, err = protocol.ParsePartInfo(http.Header{}.Get)
		Expect(err).NotTo(HaveOccurred())
		Expect(ok).To(BeFalse())
	})

	DescribeTable("refuses invalid part headers",
		func(change func(h http.Header)) {
			parts, err := protocol.Split(whole, partBytes)
			Expect(err).NotTo(HaveOccurred())
			h := headerOf(parts[1])
			change(h)
			_, ok, err := protocol.ParsePartInfo(h.Get)
			Expect(ok).To(BeTrue())
			Expect(err).To(MatchError(protocol.ErrIncomplete))
		},
		Entry("index past the count", func(h http.Header) { h[protocol.HeaderPart] = []string{"7"} }),
		Entry("index zero", func(h http.Header) { h[protocol.HeaderPart] = []string{"0"} }),
		Entry("too many parts", func(h http.Header) { h[protocol.HeaderParts] = []string{"1000000"} }),
		Entry("a whole beyond the limit", func(h http.Header) { h[protocol.HeaderWholeSize] = []string{"999999999999"} }),
		Entry("no size", func(h http.Header) { delete(h, protocol.HeaderWholeSize) }),
		Entry("a digest that is not hex", func(h http.Header) { h[protocol.HeaderWholeDigest] = []string{"xyz"} }),
		Entry("an upper-case digest", func(h http.Header) {
			h[protocol.HeaderWholeDigest] = []string{string(bytes.ToUpper([]byte(h.Get(protocol.HeaderWholeDigest))))}
		}),
	)

	It("joins parts received in any order", func() {
		parts, err := protocol.Split(whole, partBytes)
		Expect(err).NotTo(HaveOccurred())
		shuffled := []protocol.Part{parts[4], parts[0], parts[5], parts[2], parts[1], parts[3]}
		Expect(join(shuffled)).To(Equal(whole))
	})

	It("ignores a part received twice", func() {
		parts, err := protocol.Split(whole, partBytes)
		Expect(err).NotTo(HaveOccurred())
		a, err := protocol.NewAssembly(parts[0].PartInfo)
		Expect(err).NotTo(HaveOccurred())
		for i, p := range parts {
			dup, err := a.Add(p.PartInfo, p.Data)
			Expect(err).NotTo(HaveOccurred())
			Expect(dup).To(BeFalse())
			if i == 2 {
				dup, err = a.Add(p.PartInfo, p.Data)
				Expect(err).NotTo(HaveOccurred())
				Expect(dup).To(BeTrue())
			}
		}
		Expect(a.Bytes()).To(Equal(len(whole)))
		Expect(a.Whole()).To(Equal(whole))
	})

	It("says which parts are missing instead of joining", func() {
		parts, err := protocol.Split(whole, partBytes)
		Expect(err).NotTo(HaveOccurred())
		a, err := protocol.NewAssembly(parts[0].PartInfo)
		Expect(err).NotTo(HaveOccurred())
		for _, p := range []protocol.Part{parts[0], parts[2], parts[3], parts[5]} {
			_, err := a.Add(p.PartInfo, p.Data)
			Expect(err).NotTo(HaveOccurred())
		}
		Expect(a.Complete()).To(BeFalse())
		Expect(a.Missing()).To(Equal([]int{2, 5}))
		_, err = a.Whole()
		Expect(err).To(MatchError(protocol.ErrIncomplete))
		Expect(err).To(MatchError(ContainSubstring("4 of 6 parts received, missing 2, 5")))
	})

	It("refuses a document whose parts do not match its digest", func() {
		parts, err := protocol.Split(whole, partBytes)
		Expect(err).NotTo(HaveOccurred())
		forged := bytes.Clone(parts[3].Data)
		forged[0] ^= 0xff
		parts[3].Data = forged
		_, err = join(parts)
		Expect(err).To(MatchError(protocol.ErrIncomplete))
		Expect(err).To(MatchError(ContainSubstring("digest")))
	})

	It("refuses a part of another document", func() {
		parts, err := protocol.Split(whole, partBytes)
		Expect(err).NotTo(HaveOccurred())
		other, err := protocol.Split(append(bytes.Clone(whole), 'x'), partBytes)
		Expect(err).NotTo(HaveOccurred())
		a, err := protocol.NewAssembly(parts[0].PartInfo)
		Expect(err).NotTo(HaveOccurred())
		_, err = a.Add(other[1].PartInfo, other[1].Data)
		Expect(err).To(MatchError(protocol.ErrIncomplete))
		Expect(a.Bytes()).To(BeZero())
	})

	It("refuses a part that would pass the announced size", func() {
		parts, err := protocol.Split(whole, partBytes)
		Expect(err).NotTo(HaveOccurred())
		a, err := protocol.NewAssembly(parts[0].PartInfo)
		Expect(err).NotTo(HaveOccurred())
		for _, p := range parts[:5] {
			_, err := a.Add(p.PartInfo, p.Data)
			Expect(err).NotTo(HaveOccurred())
		}
		_, err = a.Add(parts[5].PartInfo, make([]byte, partBytes))
		Expect(err).To(MatchError(protocol.ErrIncomplete))
		Expect(err).To(MatchError(ContainSubstring("passes the document's")))
	})

	It("keeps within its bounds", func() {
		_, err := protocol.Split(make([]byte, protocol.MaxWholeBytes+1), 1<<20)
		Expect(errors.Is(err, protocol.ErrPartsTooLarge)).To(BeTrue())
		_, err = protocol.Split(make([]byte, protocol.MaxParts*protocol.MinPartBytes+1), protocol.MinPartBytes)
		Expect(err).To(MatchError(ContainSubstring("parts")))
		Expect(errors.Is(err, protocol.ErrPartsTooLarge)).To(BeTrue())
		_, err = protocol.Split(whole, protocol.MinPartBytes-1)
		Expect(errors.Is(err, protocol.ErrPartsTooLarge)).To(BeTrue())
		_, err = protocol.NewAssembly(protocol.PartInfo{Index: 1, Count: 2, Size: protocol.MaxWholeBytes + 1})
		Expect(errors.Is(err, protocol.ErrPartsTooLarge)).To(BeTrue())
	})

	It("sends an empty document as one part", func() {
		parts, err := protocol.Split(nil, partBytes)
		Expect(err).NotTo(HaveOccurred())
		Expect(parts).To(HaveLen(1))
		Expect(join(parts)).To(Equal([]byte{}))
	})

	It("sends whole what fits in one message with room for the part headers", func() {
		h := map[string][]string{protocol.HeaderSigner: {"U123"}}
		Expect(protocol.FitsOneMessage(1<<20, h, make([]byte, 1000))).To(BeTrue())
		Expect(protocol.FitsOneMessage(1<<20, h, make([]byte, 1<<20))).To(BeFalse())
		n := protocol.PartBytes(1<<20, h)
		Expect(n).To(BeNumerically("<", 1<<20-protocol.PartHeaderRoom))
		Expect(n + protocol.HeaderBytes(h) + protocol.HeaderBytes(protocol.PartInfo{Index: 4096, Count: 4096, Size: protocol.MaxWholeBytes, Digest: protocol.Digest(nil)}.Headers())).To(BeNumerically("<=", 1<<20))
	})

	It("names part subjects so that the host's own subject filter matches them and readers tell them apart", func() {
		s := protocol.HistoryPartSubject("req-1", "web1.example.com", 3)
		Expect(s).To(Equal("ccm.v1.history.req-1~p3.web1%2Eexample%2Ecom"))
		Expect(protocol.IsHistoryPartSubject(s)).To(BeTrue())
		Expect(protocol.IsHistoryPartSubject(protocol.HistorySubject("req-1", "web1.example.com"))).To(BeFalse())
		Expect(protocol.HistoryPartSubject("req-1", "", 2)).To(Equal("ccm.v1.history.req-1~p2._request"))
		Expect(protocol.HistoryPartMsgID("req-1", "web1", 2)).To(Equal("req-1/web1/p2"))
	})
})
