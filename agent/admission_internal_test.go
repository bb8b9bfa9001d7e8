package agent

import (
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nkeys"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/protocol"
)

// fakeReplay is a replayStore that answers what the test sets.
type fakeReplay struct {
	first replayEntry
	dup   bool
	err   error
	added []string
}

func (f *fakeReplay) addWith(id string, _, _ time.Time, _ *replayWho) (replayEntry, bool, error) {
	f.added = append(f.added, id)
	return f.first, f.dup, f.err
}

func (f *fakeReplay) finish(string, []byte, bool) error { return nil }

var _ = Describe("Admission stages", func() {
	var (
		kp  nkeys.KeyPair
		pub string
	)
	BeforeEach(func() {
		var err error
		kp, err = nkeys.CreateUser()
		Expect(err).ToNot(HaveOccurred())
		pub, err = kp.PublicKey()
		Expect(err).ToNot(HaveOccurred())
	})

	Describe("the authenticator", func() {
		sign := func(data []byte) (string, string) {
			signer, sig, err := protocol.Sign(data, kp)
			Expect(err).ToNot(HaveOccurred())
			return signer, sig
		}
		data := []byte(`{"id":"a1"}`)

		It("refuses an unsigned document unless insecure", func() {
			_, signed, e := trust{}.authenticate(data, "", "")
			Expect(signed).To(BeFalse())
			Expect(e).ToNot(BeNil())
			Expect(e.Code).To(Equal(protocol.CodeUnauthenticated))
			s, _, e := trust{insecure: true}.authenticate(data, "", "")
			Expect(e).To(BeNil())
			Expect(s).To(BeNil())
		})

		It("refuses a signature that does not cover the bytes, even when insecure", func() {
			signer, sig := sign(data)
			_, signed, e := trust{insecure: true}.authenticate([]byte(`{"id":"a2"}`), signer, sig)
			Expect(signed).To(BeFalse())
			Expect(e).ToNot(BeNil())
			Expect(e.Code).To(Equal(protocol.CodeUnauthenticated))
		})

		It("names the trusted signer, and refuses a valid signature by a key the policy does not list", func() {
			signer, sig := sign(data)
			pol := &Policy{Signers: []Signer{{Name: "ops", PublicKey: pub}}}
			s, signed, e := trust{policy: pol}.authenticate(data, signer, sig)
			Expect(e).To(BeNil())
			Expect(signed).To(BeTrue())
			Expect(s.Name).To(Equal("ops"))

			_, signed, e = trust{policy: &Policy{}}.authenticate(data, signer, sig)
			Expect(signed).To(BeTrue())
			Expect(e).ToNot(BeNil())
			Expect(e.Message).To(ContainSubstring("not trusted"))
		})
	})

	Describe("the lifetime check", func() {
		now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
		g := &admission{skew: 30 * time.Second, now: func() time.Time { return now }}

		DescribeTable("judges created and ttl against the clock and the skew",
			func(created time.Time, ttl time.Duration, want protocol.Code) {
				e := g.lifetime(protocol.NewFleetRequest("r1", created, ttl))
				if want == "" {
					Expect(e).To(BeNil())
					return
				}
				Expect(e).ToNot(BeNil())
				Expect(e.Code).To(Equal(want))
			},
			Entry("now", now, time.Minute, protocol.Code("")),
			Entry("ahead within the skew", now.Add(20*time.Second), time.Minute, protocol.Code("")),
			Entry("ahead past the skew", now.Add(time.Minute), time.Minute, protocol.CodeClockSkew),
			Entry("expired within the skew", now.Add(-80*time.Second), time.Minute, protocol.Code("")),
			Entry("expired past the skew", now.Add(-2*time.Minute), time.Minute, protocol.CodeExpired),
		)
	})

	Describe("the replay stage", func() {
		var (
			store *fakeReplay
			g     *admission
			r     *job
			req   *protocol.FleetRequest
		)
		BeforeEach(func() {
			store = &fakeReplay{}
			g = &admission{identity: "web-1", replay: store, now: time.Now}
			r = &job{received: time.Now(), record: true, audit: AuditRecord{RequestID: "r1"}}
			req = protocol.NewFleetRequest("r1", time.Now(), time.Minute)
		})

		It("claims a new id: the job owns its entry and is recorded", func() {
			reply, dup, e := g.replayed(r, req)
			Expect(e).To(BeNil())
			Expect(dup).To(BeFalse())
			Expect(reply).To(BeNil())
			Expect(r.cached).To(BeTrue())
			Expect(r.record).To(BeTrue())
			Expect(store.added).To(Equal([]string{"r1"}))
		})

		It("answers a duplicate with the first reply's events, not recorded again", func() {
			first := protocol.NewFleetReply("r1", "web-1", time.Now())
			first.Events = []*protocol.TransactionEvent{{Type: "file", Name: "/etc/motd"}}
			data, err := first.Encode()
			Expect(err).ToNot(HaveOccurred())
			store.first, store.dup = replayEntry{ID: "r1", Seen: time.Now(), Reply: data}, true
			reply, dup, e := g.replayed(r, req)
			Expect(e).To(BeNil())
			Expect(dup).To(BeTrue())
			Expect(r.record).To(BeFalse())
			Expect(reply.Error.Code).To(Equal(protocol.CodeDuplicate))
			Expect(reply.Events).To(HaveLen(1))
			Expect(r.audit.Decision).To(Equal(string(protocol.CodeDuplicate)))
		})

		It("refuses busy when the cache is full, without a record under an id that is not the job's", func() {
			store.err = ErrReplayFull
			_, _, e := g.replayed(r, req)
			Expect(e).ToNot(BeNil())
			Expect(e.Code).To(Equal(protocol.CodeBusy))
			Expect(r.record).To(BeFalse())
			Expect(r.cached).To(BeFalse())
		})

		It("keeps the cache's error as the refusal's cause, in the same words", func() {
			full := fmt.Errorf("%w: 3 requests remembered", ErrReplayFull)
			store.err = full
			_, _, e := g.replayed(r, req)
			Expect(errors.Is(e, ErrReplayFull)).To(BeTrue())
			Expect(errors.Is(e, protocol.CodeBusy)).To(BeTrue())
			Expect(e.Message).To(Equal(full.Error()))
		})

		It("refuses internal when the cache fails otherwise", func() {
			gone := errors.New("disk gone")
			store.err = gone
			_, _, e := g.replayed(r, req)
			Expect(e.Code).To(Equal(protocol.CodeInternal))
			Expect(errors.Is(e, gone)).To(BeTrue())
			Expect(e.Message).To(Equal("disk gone"))
		})
	})

	Describe("the reply subject check", func() {
		It("refuses a signed request re-sent to another inbox, with no record", func() {
			r := &job{record: true}
			req := &protocol.FleetRequest{Reply: "_INBOX.a"}
			Expect(replySubject(r, req, "_INBOX.a", true)).To(BeNil())
			Expect(r.record).To(BeTrue())
			e := replySubject(r, req, "_INBOX.b", true)
			Expect(e).ToNot(BeNil())
			Expect(e.Code).To(Equal(protocol.CodeUnauthenticated))
			Expect(r.record).To(BeFalse())
		})
	})

	Describe("the authorizer", func() {
		It("has no policy to ask without a signer (insecure mode)", func() {
			p := &policyJudge{}
			var audit AuditRecord
			Expect(p.authorize("r1", nil, &body{}, false, nil, &audit)).To(BeNil())
			Expect(p.guard(&job{})).To(BeNil())
		})

		It("refuses a real run to a noop_only signer, naming the rule, and lets its noop through", func() {
			pol := &Policy{Signers: []Signer{{Name: "auditor", PublicKey: pub, Allow: []string{"file"}, NoopOnly: true}}}
			Expect(pol.Validate()).To(Succeed())
			var audit AuditRecord
			e := (&policyJudge{}).authorize("r1", &pol.Signers[0], &body{}, false, map[string]any{"role": "web"}, &audit)
			Expect(e).ToNot(BeNil())
			Expect(e.Code).To(Equal(protocol.CodeForbidden))
			Expect(audit.Rule).ToNot(BeEmpty())
			Expect((&policyJudge{}).authorize("r2", &pol.Signers[0], &body{}, true, map[string]any{"role": "web"}, &AuditRecord{})).To(BeNil())
		})
	})
})
