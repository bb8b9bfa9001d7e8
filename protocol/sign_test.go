package protocol_test

import (
	"encoding/base64"
	"errors"

	"github.com/nats-io/nkeys"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/protocol"
)

var _ = Describe("Sign and Verify", func() {
	var (
		kp, other    nkeys.KeyPair
		signer, sig  string
		otherSigner  string
		otherSig     string
		body         []byte
		serverPublic string
	)
	BeforeEach(func() {
		var err error
		kp, err = nkeys.CreateUser()
		Expect(err).ToNot(HaveOccurred())
		other, err = nkeys.CreateUser()
		Expect(err).ToNot(HaveOccurred())
		body = []byte(`{"protocol":"io.choria.ccm.v1.fleet.request","id":"abc"}`)
		signer, sig, err = protocol.Sign(body, kp)
		Expect(err).ToNot(HaveOccurred())
		otherSigner, otherSig, err = protocol.Sign(body, other)
		Expect(err).ToNot(HaveOccurred())
		server, err := nkeys.CreateServer()
		Expect(err).ToNot(HaveOccurred())
		serverPublic, err = server.PublicKey()
		Expect(err).ToNot(HaveOccurred())
	})

	It("signs with the user key and verifies the exact bytes", func() {
		pub, _ := kp.PublicKey()
		Expect(signer).To(Equal(pub))
		Expect(signer).To(HavePrefix("U"))
		Expect(protocol.Verify(body, signer, sig)).To(Succeed())
	})

	It("refuses to sign with a key that is not a user key", func() {
		server, err := nkeys.CreateServer()
		Expect(err).ToNot(HaveOccurred())
		_, _, err = protocol.Sign(body, server)
		Expect(err).To(MatchError(protocol.ErrSigner))
		_, _, err = protocol.Sign(body, nil)
		Expect(err).To(MatchError(protocol.ErrSigner))
	})

	DescribeTable("refuses every tampering",
		func(mutate func(b []byte, signer, sig string) ([]byte, string, string), want error) {
			b := append([]byte(nil), body...)
			b, s, g := mutate(b, signer, sig)
			err := protocol.Verify(b, s, g)
			Expect(err).To(HaveOccurred())
			Expect(errors.Is(err, want)).To(BeTrue(), "%v", err)
		},
		Entry("a flipped byte in the body", func(b []byte, s, g string) ([]byte, string, string) {
			b[10] ^= 1
			return b, s, g
		}, protocol.ErrSignature),
		Entry("an appended byte", func(b []byte, s, g string) ([]byte, string, string) {
			return append(b, ' '), s, g
		}, protocol.ErrSignature),
		Entry("a truncated body", func(b []byte, s, g string) ([]byte, string, string) {
			return b[:len(b)-1], s, g
		}, protocol.ErrSignature),
		Entry("an empty body", func(b []byte, s, g string) ([]byte, string, string) {
			return nil, s, g
		}, protocol.ErrSignature),
		Entry("another key's signature with the right signer", func(b []byte, s, g string) ([]byte, string, string) {
			return b, s, otherSig
		}, protocol.ErrSignature),
		Entry("the right signature with another signer", func(b []byte, s, g string) ([]byte, string, string) {
			return b, otherSigner, g
		}, protocol.ErrSignature),
		Entry("no signature", func(b []byte, s, g string) ([]byte, string, string) {
			return b, s, ""
		}, protocol.ErrSignature),
		Entry("no signer", func(b []byte, s, g string) ([]byte, string, string) {
			return b, "", g
		}, protocol.ErrSigner),
		Entry("a signer that is not a key", func(b []byte, s, g string) ([]byte, string, string) {
			return b, "Unotakey", g
		}, protocol.ErrSigner),
		Entry("a server key as signer", func(b []byte, s, g string) ([]byte, string, string) {
			return b, serverPublic, g
		}, protocol.ErrSigner),
		Entry("a signature that is not base64", func(b []byte, s, g string) ([]byte, string, string) {
			return b, s, "!!!" + g[3:]
		}, protocol.ErrSignature),
		Entry("a signature in standard base64 with padding", func(b []byte, s, g string) ([]byte, string, string) {
			raw, _ := base64.RawURLEncoding.DecodeString(g)
			return b, s, base64.StdEncoding.EncodeToString(raw)
		}, protocol.ErrSignature),
		Entry("a truncated signature", func(b []byte, s, g string) ([]byte, string, string) {
			return b, s, g[:len(g)-4]
		}, protocol.ErrSignature),
		Entry("a flipped signature character", func(b []byte, s, g string) ([]byte, string, string) {
			c := []byte(g)
			if c[5] == 'A' {
				c[5] = 'B'
			} else {
				c[5] = 'A'
			}
			return b, s, string(c)
		}, protocol.ErrSignature),
		Entry("an oversized signature", func(b []byte, s, g string) ([]byte, string, string) {
			return b, s, g + g
		}, protocol.ErrSignature),
	)

	It("signs the same with a prepared KeySigner", func() {
		s, err := protocol.NewKeySigner(kp)
		Expect(err).ToNot(HaveOccurred())
		Expect(s.PublicKey()).To(Equal(signer))
		Expect(s.Sign(body)).To(Equal(sig))
		Expect(s.Header(body)[protocol.HeaderSignature]).To(Equal([]string{sig}))
		pubOnly, err := nkeys.FromPublicKey(signer)
		Expect(err).ToNot(HaveOccurred())
		_, err = protocol.NewKeySigner(pubOnly)
		Expect(err).To(MatchError(protocol.ErrSigner))
	})

	It("builds the two headers", func() {
		h, err := protocol.SignatureHeaders(body, kp)
		Expect(err).ToNot(HaveOccurred())
		Expect(h[protocol.HeaderSigner]).To(Equal([]string{signer}))
		Expect(protocol.Verify(body, h[protocol.HeaderSigner][0], h[protocol.HeaderSignature][0])).To(Succeed())
	})

	It("decodes the sender and reply of a request and checks the sender", func() {
		doc := fleetDoc()
		doc["sender"] = signer
		doc["reply"] = "_INBOX.abc"
		req, err := protocol.DecodeFleetRequest(encode(doc), protocol.Limits{})
		Expect(err).ToNot(HaveOccurred())
		Expect(req.Sender).To(Equal(signer))
		Expect(req.Reply).To(Equal("_INBOX.abc"))
		doc["sender"] = serverPublic
		_, err = protocol.DecodeFleetRequest(encode(doc), protocol.Limits{})
		Expect(err).To(MatchError(ContainSubstring(`field "sender"`)))
	})
})
