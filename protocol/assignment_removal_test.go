package protocol_test

import (
	"strings"
	"time"

	"github.com/nats-io/nkeys"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/protocol"
)

var _ = Describe("Assignment removals", func() {
	It("signs a tombstone that decodes back and whose bytes the signature covers", func() {
		kp, err := nkeys.CreateUser()
		Expect(err).ToNot(HaveOccurred())
		pub, _ := kp.PublicKey()
		stored, err := protocol.SignAssignmentRemoval(&protocol.AssignmentRemoval{Name: "web", Created: time.Now().UTC(), Revision: 7}, kp)
		Expect(err).ToNot(HaveOccurred())
		s, err := protocol.DecodeSignedAssignment(stored, protocol.Limits{})
		Expect(err).ToNot(HaveOccurred())
		Expect(s.Assignment).To(BeEmpty())
		Expect(s.Signed()).To(Equal(s.Removal))
		Expect(protocol.Verify(s.Signed(), s.Signer, s.Signature)).To(Succeed())
		r, err := protocol.DecodeAssignmentRemoval(s.Removal, protocol.Limits{})
		Expect(err).ToNot(HaveOccurred())
		Expect(r.Name).To(Equal("web"))
		Expect(r.Sender).To(Equal(pub))
		Expect(r.Revision).To(BeEquivalentTo(7))

		// A removal is not an assignment, and the other way round.
		_, err = protocol.DecodeAssignment(s.Removal, protocol.Limits{})
		Expect(err).To(MatchError(protocol.ErrBadRequest))
		tampered := []byte(strings.Replace(string(s.Removal), `"web"`, `"db"`, 1))
		Expect(protocol.Verify(tampered, s.Signer, s.Signature)).To(MatchError(protocol.ErrSignature))
	})

	It("refuses a stored form holding both an assignment and a removal, or neither", func() {
		_, err := protocol.DecodeSignedAssignment([]byte(`{"protocol":"`+protocol.SignedAssignmentProtocol+`","assignment":"e30=","removal":"e30=","signer":"","signature":""}`), protocol.Limits{})
		Expect(err).To(MatchError(ContainSubstring("cannot both be set")))
		_, err = protocol.DecodeSignedAssignment([]byte(`{"protocol":"`+protocol.SignedAssignmentProtocol+`","signer":"","signature":""}`), protocol.Limits{})
		Expect(err).To(MatchError(ContainSubstring("is required")))
	})

	It("refuses a tombstone without a name", func() {
		kp, err := nkeys.CreateUser()
		Expect(err).ToNot(HaveOccurred())
		_, err = protocol.SignAssignmentRemoval(&protocol.AssignmentRemoval{Created: time.Now()}, kp)
		Expect(err).To(MatchError(ContainSubstring("must not be empty")))
	})
})
