package integration_test

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/broker/brokertest"
	"github.com/ccm-fleet/ccm/protocol"
)

var _ = Describe("A signed-request agent", Ordered, func() {
	const identity = "secure-1"
	var (
		sa                          *securedAgent
		nc                          *nats.Conn
		ops, filer, auditor, outlaw signingKey
		dir                         string
		subject                     = protocol.RequestNodeSubject(identity)
	)

	BeforeAll(func() {
		dir = GinkgoT().TempDir()
		ops = newSigningKey(dir, "ops")
		filer = newSigningKey(dir, "filer")
		auditor = newSigningKey(dir, "auditor")
		outlaw = newSigningKey(dir, "outlaw")
		policy := policyFile(dir,
			signerEntry("ops", ops.pub, "file, exec"),
			signerEntry("filer", filer.pub, "file"),
			signerEntry("auditor", auditor.pub, "file, exec", "noop_only: true"),
		)
		b := brokertest.Start(GinkgoT())
		sa = &securedAgent{b: b, identity: identity, stateDir: filepath.Join(dir, "state"), policy: policy}
		sa.start()
		DeferCleanup(sa.stopLast)
		var err error
		nc, err = nats.Connect(b.ClientURL())
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(nc.Close)
	})

	// refused sends w and checks the refusal: its code in the reply, the
	// canary never created, exactly one audit line with that decision.
	refused := func(id, canary string, w wire, code protocol.Code) *protocol.FleetReply {
		r := exchange(nc, subject, w, 10*time.Second)
		Expect(r).ToNot(BeNil(), "a refusal is answered")
		Expect(r.Error).ToNot(BeNil())
		Expect(r.Error.Code).To(Equal(code), r.Error.Message)
		Expect(r.Events).To(BeEmpty())
		Expect(canary).ToNot(BeAnExistingFile())
		Eventually(func() []string {
			var d []string
			for _, rec := range sa.auditOf(id) {
				d = append(d, rec.Decision)
			}
			return d
		}).Should(Equal([]string{string(code)}))
		return r
	}
	canaryFor := func(id string) string { return filepath.Join(dir, "canary-"+id) }
	valid := func(id string, key *signingKey, extra map[string]any) (*protocol.FleetRequest, string) {
		c := canaryFor(id)
		return canaryRequest(id, c, time.Now(), time.Minute, extra), c
	}

	It("refuses an unsigned request (unauthenticated)", func() {
		req, c := valid("unsigned", nil, nil)
		r := refused("unsigned", c, signedWire(req, nc.NewInbox(), nil), protocol.CodeUnauthenticated)
		Expect(r.Error.Message).To(ContainSubstring("unsigned request"))
	})

	It("refuses a request signed by a key the policy does not trust (unauthenticated)", func() {
		req, c := valid("wrongkey", nil, nil)
		r := refused("wrongkey", c, signedWire(req, nc.NewInbox(), &outlaw), protocol.CodeUnauthenticated)
		Expect(r.Error.Message).To(ContainSubstring("not trusted"))
	})

	It("refuses a request with one byte changed after signing (unauthenticated)", func() {
		req, c := valid("tampered", nil, nil)
		w := signedWire(req, nc.NewInbox(), &ops)
		i := len(w.body) - 10
		w.body[i] ^= 0x01
		refused("tampered", c, w, protocol.CodeUnauthenticated)
	})

	It("refuses a request carrying another request's signature (unauthenticated)", func() {
		other, _ := valid("other", nil, nil)
		ow := signedWire(other, nc.NewInbox(), &ops)
		req, c := valid("swapped", nil, nil)
		w := signedWire(req, nc.NewInbox(), &ops)
		w.header.Set(protocol.HeaderSignature, ow.header.Get(protocol.HeaderSignature))
		refused("swapped", c, w, protocol.CodeUnauthenticated)
	})

	It("refuses a body whose sender is not the header's signer (unauthenticated)", func() {
		req, c := valid("sender", nil, nil)
		req.Reply = nc.NewInbox()
		req.Sender = filer.pub
		w := signedWire(req, req.Reply, nil)
		signer, sig, err := protocol.Sign(w.body, ops.kp)
		Expect(err).ToNot(HaveOccurred())
		w.header.Set(protocol.HeaderSigner, signer)
		w.header.Set(protocol.HeaderSignature, sig)
		r := refused("sender", c, w, protocol.CodeUnauthenticated)
		Expect(r.Error.Message).To(ContainSubstring(`field "sender"`))
	})

	It("refuses an expired request (expired)", func() {
		c := canaryFor("expired")
		req := canaryRequest("expired", c, time.Now().Add(-10*time.Minute), time.Minute, nil)
		refused("expired", c, signedWire(req, nc.NewInbox(), &ops), protocol.CodeExpired)
	})

	It("refuses a request created too far in the future (clock_skew)", func() {
		c := canaryFor("future")
		req := canaryRequest("future", c, time.Now().Add(10*time.Minute), time.Minute, nil)
		refused("future", c, signedWire(req, nc.NewInbox(), &ops), protocol.CodeClockSkew)
	})

	It("refuses a request sent with another reply subject than the signed one (unauthenticated)", func() {
		req, c := valid("hijacked", nil, nil)
		w := signedWire(req, nc.NewInbox(), &ops)
		w.reply = nc.NewInbox() // the attacker's inbox, not the signed one
		r := refused("hijacked", c, w, protocol.CodeUnauthenticated)
		Expect(r.Error.Message).To(ContainSubstring("reply subject"))
	})

	It("ignores a request whose targets leave it out, and audits that", func() {
		req, c := valid("wrongtarget", nil, nil)
		req.Targets = []string{"secure-2"}
		Expect(exchange(nc, subject, signedWire(req, nc.NewInbox(), &ops), 500*time.Millisecond)).To(BeNil())
		Expect(c).ToNot(BeAnExistingFile())
		Eventually(func() int { return len(sa.auditOf("wrongtarget")) }).Should(Equal(1))
		Expect(sa.auditOf("wrongtarget")[0].Decision).To(Equal("not_targeted"))
	})

	It("refuses a resource type the signer is not allowed (forbidden)", func() {
		req, c := valid("forbiddentype", nil, nil)
		r := refused("forbiddentype", c, signedWire(req, nc.NewInbox(), &filer), protocol.CodeForbidden)
		Expect(r.Error.Message).To(ContainSubstring("signer filer is not allowed resource type exec"))
	})

	It("refuses the shell provider to a signer without shell: true (forbidden)", func() {
		req, c := valid("shell", nil, map[string]any{"provider": "shell"})
		r := refused("shell", c, signedWire(req, nc.NewInbox(), &ops), protocol.CodeForbidden)
		Expect(r.Error.Message).To(ContainSubstring("shell provider"))
	})

	It("refuses a change from a noop-only signer (forbidden)", func() {
		req, c := valid("nooponly", nil, nil)
		r := refused("nooponly", c, signedWire(req, nc.NewInbox(), &auditor), protocol.CodeForbidden)
		Expect(r.Error.Message).To(ContainSubstring("noop_only"))
	})

	It("runs a noop request from the noop-only signer", func() {
		req, c := valid("noopok", nil, nil)
		req.Noop = true
		r := exchange(nc, subject, signedWire(req, nc.NewInbox(), &auditor), 10*time.Second)
		Expect(r).ToNot(BeNil())
		Expect(r.Error).To(BeNil())
		Expect(r.Events).To(HaveLen(1))
		Expect(r.Events[0].Noop).To(BeTrue())
		Expect(c).ToNot(BeAnExistingFile())
	})

	It("runs a valid request once; a replay gets duplicate with the first events, also after a restart", func() {
		req, c := valid("once", nil, nil)
		w := signedWire(req, nc.NewInbox(), &ops)
		r := exchange(nc, subject, w, 10*time.Second)
		Expect(r).ToNot(BeNil())
		Expect(r.Error).To(BeNil())
		Expect(r.Events).To(HaveLen(1))
		Expect(r.Events[0].Changed).To(BeTrue())
		Expect(c).To(BeAnExistingFile())
		Expect(os.Remove(c)).To(Succeed())

		dup := exchange(nc, subject, w, 10*time.Second)
		Expect(dup).ToNot(BeNil())
		Expect(dup.Error.Code).To(Equal(protocol.CodeDuplicate))
		Expect(dup.Events).To(HaveLen(1))
		Expect(dup.Events[0].EventID).To(Equal(r.Events[0].EventID))
		Expect(c).ToNot(BeAnExistingFile())

		sa.stop()
		sa.start()
		dup = exchange(nc, subject, w, 10*time.Second)
		Expect(dup).ToNot(BeNil())
		Expect(dup.Error.Code).To(Equal(protocol.CodeDuplicate))
		Expect(dup.Events).To(HaveLen(1))
		Expect(c).ToNot(BeAnExistingFile())

		var decisions []string
		for _, rec := range sa.auditOf("once") {
			decisions = append(decisions, rec.Decision)
		}
		// accepted (before running), accepted with its result, then the two replays
		Expect(decisions).To(Equal([]string{"accepted", "accepted", "duplicate", "duplicate"}))
		Expect(sa.auditOf("once")[1].Result.Changed).To(Equal(1))
		Expect(sa.auditOf("once")[0].Signer.Name).To(Equal("ops"))
	})

	It("survives 1,000 random byte strings and 1,000 signed malformed requests: nothing runs, a valid request then works", func() {
		canary := canaryFor("flood")
		before := len(sa.auditLines())
		baseline := runtime.NumGoroutine()
		rnd := rand.New(rand.NewPCG(6, 6))
		for i := range 1000 {
			b := make([]byte, rnd.IntN(2048))
			for j := range b {
				b[j] = byte(rnd.UintN(256))
			}
			h := nats.Header{}
			if i%2 == 0 {
				h.Set(protocol.HeaderSigner, ops.pub)
				h.Set(protocol.HeaderSignature, base64.RawURLEncoding.EncodeToString(b[:min(len(b), 64)]))
			}
			Expect(nc.PublishMsg(&nats.Msg{Subject: subject, Header: h, Data: b})).To(Succeed())
			if i%100 == 99 {
				Expect(nc.Flush()).To(Succeed())
			}
		}
		base := signedWire(canaryRequest("floodbase", canary, time.Now(), time.Minute, nil), "", &ops).body
		mutations := []func(i int, b []byte) []byte{
			func(i int, b []byte) []byte { return b[:rnd.IntN(len(b))] },
			func(i int, b []byte) []byte {
				return bytes.Replace(b, []byte(`"protocol":"`), []byte(`"protocol":"x`), 1)
			},
			func(i int, b []byte) []byte {
				return bytes.Replace(b, []byte(`{"protocol"`), []byte(fmt.Sprintf(`{"x%d":1,"protocol"`, i)), 1)
			},
			func(i int, b []byte) []byte {
				return bytes.Replace(b, []byte(`"ttl":"1m0s"`), []byte(`"ttl":"-1s"`), 1)
			},
			func(i int, b []byte) []byte {
				return bytes.Replace(b, []byte(`"id":"`), []byte(fmt.Sprintf(`"id":"../%d`, i)), 1)
			},
			func(i int, b []byte) []byte {
				return bytes.Replace(b, []byte(`"type":"exec"`), []byte(`"type":"cron"`), 1)
			},
			func(i int, b []byte) []byte {
				return []byte(strings.Repeat("[", 1000+i) + strings.Repeat("]", 1000+i))
			},
			func(i int, b []byte) []byte { return append(bytes.Clone(b), []byte(`{"trailing":true}`)...) },
		}
		for i := range 1000 {
			body := mutations[i%len(mutations)](i, bytes.Clone(base))
			signer, sig, err := protocol.Sign(body, ops.kp)
			Expect(err).ToNot(HaveOccurred())
			h := nats.Header{}
			h.Set(protocol.HeaderSigner, signer)
			h.Set(protocol.HeaderSignature, sig)
			Expect(nc.PublishMsg(&nats.Msg{Subject: subject, Header: h, Data: body})).To(Succeed())
			if i%100 == 99 {
				Expect(nc.Flush()).To(Succeed())
			}
		}
		Expect(nc.Flush()).To(Succeed())

		// The agent is still there and runs a valid request.
		req, c := valid("afterflood", nil, nil)
		r := exchange(nc, subject, signedWire(req, nc.NewInbox(), &ops), 30*time.Second)
		Expect(r).ToNot(BeNil())
		Expect(r.Error).To(BeNil())
		Expect(r.Events).To(HaveLen(1))
		Expect(r.Events[0].Changed).To(BeTrue())
		Expect(c).To(BeAnExistingFile())
		Expect(canary).ToNot(BeAnExistingFile())

		var accepted []string
		lines := sa.auditLines()[before:]
		for _, rec := range lines {
			if rec.Decision == "accepted" {
				accepted = append(accepted, rec.RequestID)
			}
		}
		Expect(accepted).To(Equal([]string{"afterflood", "afterflood"}), "only the valid request was accepted")
		Expect(len(lines)).To(BeNumerically(">", 1000), "the refusals are audited")
		Eventually(runtime.NumGoroutine).WithTimeout(20 * time.Second).Should(BeNumerically("<=", baseline+5))
	})
})
