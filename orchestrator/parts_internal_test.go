package orchestrator

import (
	"bytes"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/protocol"
)

var _ = Describe("assembler", func() {
	var (
		now time.Time
		s   *assembler
	)
	BeforeEach(func() {
		now = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		s = newAssembler(func() time.Time { return now })
	})

	// reply is a reply document of identity padded to size bytes, cut
	// into parts of the smallest size, each as the agent sends it (part 1
	// with the signature headers).
	reply := func(identity string, size int) ([]byte, []*nats.Msg) {
		GinkgoHelper()
		doc := fmt.Sprintf(`{"protocol":%q,"request_id":"r1","identity":%q,"pad":"`, protocol.FleetReplyProtocol, identity)
		doc += string(bytes.Repeat([]byte("x"), size-len(doc)-2)) + `"}`
		parts, err := protocol.Split([]byte(doc), protocol.MinPartBytes)
		Expect(err).NotTo(HaveOccurred())
		msgs := make([]*nats.Msg, len(parts))
		for i, p := range parts {
			h := nats.Header(p.Headers())
			if p.Index == 1 {
				h.Set(protocol.HeaderSigner, "U"+identity)
				h.Set(protocol.HeaderSignature, "sig")
			}
			msgs[i] = &nats.Msg{Subject: "_INBOX.x", Header: h, Data: p.Data}
		}
		return []byte(doc), msgs
	}

	It("passes on a message that is not a part", func() {
		whole, part := s.add(&nats.Msg{Data: []byte(`{}`), Header: nats.Header{}})
		Expect(part).To(BeFalse())
		Expect(whole).To(BeNil())
	})

	It("joins parts arriving out of order and twice, with part 1's signature", func() {
		doc, msgs := reply("web1", 4*protocol.MinPartBytes+10)
		Expect(msgs).To(HaveLen(5))
		var got *nats.Msg
		for _, i := range []int{3, 0, 3, 4, 1, 0, 2} {
			whole, part := s.add(msgs[i])
			Expect(part).To(BeTrue())
			if whole != nil {
				Expect(got).To(BeNil(), "joined once")
				got = whole
			}
		}
		Expect(got).NotTo(BeNil())
		Expect(got.Data).To(Equal(doc))
		Expect(got.Header.Get(protocol.HeaderSigner)).To(Equal("Uweb1"))
		Expect(s.joiningCount()).To(BeZero())
		Expect(s.bytes).To(BeZero())
		Expect(s.takeIncomplete()).To(BeEmpty())
	})

	It("reports a reply whose part never came, with the identity part 1 claims, once its time is up", func() {
		_, msgs := reply("web2", 3*protocol.MinPartBytes)
		for _, m := range []*nats.Msg{msgs[0], msgs[2]} {
			whole, _ := s.add(m)
			Expect(whole).To(BeNil())
		}
		Expect(s.stalled(now.Add(partsStall / 2))).To(BeFalse())
		Expect(s.stalled(now.Add(partsStall))).To(BeTrue(), "history is read while the parts may still come")
		Expect(s.expire(now.Add(partsTimeout / 2))).To(BeFalse())
		Expect(s.expire(now.Add(partsTimeout))).To(BeTrue())
		inc := s.takeIncomplete()
		Expect(inc).To(HaveLen(1))
		Expect(inc[0].identity).To(Equal("web2"))
		Expect(inc[0].reason).To(ContainSubstring("missing part 2"))
		Expect(s.bytes).To(BeZero(), "its memory is released")
	})

	It("reports the replies still being joined when the run ends", func() {
		_, msgs := reply("web3", 2*protocol.MinPartBytes+1)
		s.add(msgs[0])
		s.close()
		Expect(incompleteHosts(s.takeIncomplete(), func(string) bool { return true })).To(Equal([]string{"web3"}))
	})

	It("refuses a reply whose parts do not match its digest", func() {
		_, msgs := reply("web4", 2*protocol.MinPartBytes+1)
		forged := bytes.Clone(msgs[1].Data)
		forged[5] = 'y'
		msgs[1].Data = forged
		for _, m := range msgs {
			whole, _ := s.add(m)
			Expect(whole).To(BeNil())
		}
		inc := s.takeIncomplete()
		Expect(inc).To(HaveLen(1))
		Expect(inc[0].reason).To(ContainSubstring("digest"))
	})

	It("reports parts with invalid headers", func() {
		h := nats.Header{}
		h.Set(protocol.HeaderPart, "9")
		h.Set(protocol.HeaderParts, "2")
		whole, part := s.add(&nats.Msg{Header: h, Data: []byte("x")})
		Expect(part).To(BeTrue())
		Expect(whole).To(BeNil())
		Expect(s.takeIncomplete()).To(HaveLen(1))
	})

	It("joins at most maxJoiningReplies replies at once", func() {
		for i := range maxJoiningReplies {
			_, msgs := reply(fmt.Sprintf("h%d", i), protocol.MinPartBytes+1)
			s.add(msgs[0])
		}
		Expect(s.joiningCount()).To(Equal(maxJoiningReplies))
		_, msgs := reply("one-more", protocol.MinPartBytes+1)
		s.add(msgs[0])
		Expect(s.joiningCount()).To(Equal(maxJoiningReplies))
		inc := s.takeIncomplete()
		Expect(inc).To(HaveLen(1))
		Expect(inc[0].identity).To(Equal("one-more"))
	})

	It("holds at most its byte bound in all", func() {
		s.maxBytes = 10 * protocol.MinPartBytes
		// Replies of four parts: parts 1 to 3 of each are held until
		// the total would pass the bound.
		held := 0
		for i := 0; ; i++ {
			_, msgs := reply(fmt.Sprintf("b%d", i), 4*protocol.MinPartBytes)
			for _, m := range msgs[:3] {
				whole, _ := s.add(m)
				Expect(whole).To(BeNil())
			}
			if inc := s.takeIncomplete(); len(inc) > 0 {
				Expect(inc[0].identity).To(Equal(fmt.Sprintf("b%d", i)))
				Expect(inc[0].reason).To(ContainSubstring("passed"))
				break
			}
			held++
			Expect(held).To(BeNumerically("<", 10))
		}
		Expect(held).To(Equal(3))
		Expect(s.bytes).To(BeNumerically("<=", s.maxBytes))
	})
})
