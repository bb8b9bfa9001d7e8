package protocol_test

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/nats-io/nkeys"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/protocol"
)

var _ = Describe("Assignments", func() {
	var kp nkeys.KeyPair
	BeforeEach(func() {
		var err error
		kp, err = nkeys.CreateUser()
		Expect(err).ToNot(HaveOccurred())
	})
	valid := func() *protocol.Assignment {
		f, err := protocol.NewFilter([]string{"role=web"}, nil)
		Expect(err).ToNot(HaveOccurred())
		return &protocol.Assignment{
			Protocol: protocol.AssignmentProtocol, Name: "web", Created: time.Now().UTC(), Filter: f,
			Interval: protocol.Duration(time.Minute), Manifest: json.RawMessage(`{"manifest":{}}`),
		}
	}

	It("signs, decodes back and selects hosts by targets and filter", func() {
		stored, err := protocol.SignAssignment(valid(), kp)
		Expect(err).ToNot(HaveOccurred())
		s, err := protocol.DecodeSignedAssignment(stored, protocol.Limits{})
		Expect(err).ToNot(HaveOccurred())
		pub, _ := kp.PublicKey()
		Expect(s.Signer).To(Equal(pub))
		Expect(protocol.Verify(s.Assignment, s.Signer, s.Signature)).To(Succeed())
		a, err := protocol.DecodeAssignment(s.Assignment, protocol.Limits{})
		Expect(err).ToNot(HaveOccurred())
		Expect(a.Sender).To(Equal(pub))
		Expect(a.Selects("web1", map[string]any{"role": "web"})).To(BeTrue())
		Expect(a.Selects("db1", map[string]any{"role": "db"})).To(BeFalse())
		a.Targets = []string{"web2"}
		Expect(a.Selects("web1", map[string]any{"role": "web"})).To(BeFalse(), "targets name the hosts")

		// One changed byte breaks the signature.
		tampered := []byte(strings.Replace(string(s.Assignment), `"web"`, `"weB"`, 1))
		Expect(protocol.Verify(tampered, s.Signer, s.Signature)).To(MatchError(protocol.ErrSignature))
	})

	DescribeTable("refuses what agents could not run, naming the field",
		func(change func(a *protocol.Assignment), problem string) {
			a := valid()
			change(a)
			_, err := protocol.SignAssignment(a, kp)
			Expect(err).To(MatchError(protocol.ErrBadRequest))
			Expect(err.Error()).To(ContainSubstring(problem))
		},
		Entry("an empty name", func(a *protocol.Assignment) { a.Name = "" }, "must not be empty"),
		Entry("a dotted name", func(a *protocol.Assignment) { a.Name = "web.1" }, "position 3 is not allowed"),
		Entry("a name starting with -", func(a *protocol.Assignment) { a.Name = "-web" }, "must start with a letter or a digit"),
		Entry("a long name", func(a *protocol.Assignment) { a.Name = strings.Repeat("a", 65) }, "the limit is 64"),
		Entry("an interval too short", func(a *protocol.Assignment) { a.Interval = protocol.Duration(time.Millisecond) }, `"interval": 1ms is not between 1s and 168h0m0s`),
		Entry("a splay longer than the interval", func(a *protocol.Assignment) { a.Splay = protocol.Duration(time.Hour) }, `"splay": 1h0m0s must be between 0 and the interval 1m0s`),
		Entry("a manifest that is not an object", func(a *protocol.Assignment) { a.Manifest = json.RawMessage(`[]`) }, `"manifest" must be an object`),
		Entry("a bad target", func(a *protocol.Assignment) { a.Targets = []string{"-x"} }, "targets[0]"),
	)

	It("decodes strictly: unknown keys and a wrong protocol are refused", func() {
		stored, err := protocol.SignAssignment(valid(), kp)
		Expect(err).ToNot(HaveOccurred())
		s, err := protocol.DecodeSignedAssignment(stored, protocol.Limits{})
		Expect(err).ToNot(HaveOccurred())
		extra := strings.Replace(string(s.Assignment), `{`, `{"colour":"red",`, 1)
		_, err = protocol.DecodeAssignment([]byte(extra), protocol.Limits{})
		Expect(err).To(MatchError(ContainSubstring("colour")))
		_, err = protocol.DecodeSignedAssignment([]byte(`{"protocol":"x","assignment":"e30=","signer":"","signature":""}`), protocol.Limits{})
		Expect(err).To(MatchError(ContainSubstring(`expected "io.choria.ccm.v1.assignment.signed"`)))
	})
})
