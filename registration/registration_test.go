package registration_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/broker/brokertest"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/registration"
)

func web(addr, ttl string) *registration.Entry {
	return &registration.Entry{Cluster: "production", Service: "web", Protocol: "http", Address: addr, Port: 80, Priority: 10, TTL: ttl, Host: "web1"}
}

func hostWeb(addr, host string) *registration.Entry {
	e := web(addr, "1h")
	e.Host = host
	return e
}

func must(kp nkeys.KeyPair, err error) nkeys.KeyPair {
	GinkgoHelper()
	Expect(err).NotTo(HaveOccurred())
	return kp
}

func addresses(recs []registration.Record) []string {
	var out []string
	for _, r := range recs {
		out = append(out, r.Address)
	}
	return out
}

var _ = Describe("Entry", func() {
	DescribeTable("refuses what CCM refuses",
		func(mod func(e *registration.Entry), field string) {
			e := web("10.0.0.1", "10m")
			mod(e)
			err := e.Validate()
			Expect(err).To(MatchError(registration.ErrInvalid))
			Expect(err.Error()).To(ContainSubstring(field))
		},
		Entry("a cluster starting with a digit", func(e *registration.Entry) { e.Cluster = "1prod" }, "cluster"),
		Entry("a service with a dot", func(e *registration.Entry) { e.Service = "web.x" }, "service"),
		Entry("a wildcard address", func(e *registration.Entry) { e.Address = "10.*" }, "address"),
		Entry("port 70000", func(e *registration.Entry) { e.Port = 70000 }, "port"),
		Entry("priority 0", func(e *registration.Entry) { e.Priority = 0 }, "priority"),
		Entry("priority 256", func(e *registration.Entry) { e.Priority = 256 }, "priority"),
		Entry("a ttl that does not parse", func(e *registration.Entry) { e.TTL = "soon" }, "ttl"),
	)

	It("keeps an entry at CCM's subject", func() {
		Expect(web("10.0.0.1", "").Subject()).To(MatchRegexp(`^choria\.ccm\.registration\.v1\.production\.http\.web\.10_0_0_1\.[0-9a-f]{16}\.\*$`))
		Expect(web("10.0.0.1", "").PublisherSubject("UKEY")).To(MatchRegexp(`^choria\.ccm\.registration\.v1\.production\.http\.web\.10_0_0_1\.[0-9a-f]{16}\.UKEY$`))
		Expect(registration.FilterSubject("production", "*", "", "10.0.0.1")).To(Equal("choria.ccm.registration.v1.production.*.*.10_0_0_1.*.*"))
	})
})

var _ = Describe("Stream", func() {
	var (
		js     jetstream.JetStream
		signer *protocol.KeySigner
		trust  *registration.Trust
		ctx    = context.Background()
	)
	BeforeEach(func() {
		b := brokertest.Start(GinkgoT())
		nc, err := nats.Connect(b.ClientURL())
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(nc.Close)
		js, err = jetstream.New(nc)
		Expect(err).NotTo(HaveOccurred())
		s, err := registration.EnsureStream(ctx, js, registration.DefaultStream, 1, time.Minute)
		Expect(err).NotTo(HaveOccurred())
		info, err := s.Info(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(info.Config.AllowMsgTTL).To(BeTrue())
		kp, _ := nkeys.CreateUser()
		signer, err = protocol.NewKeySigner(kp)
		Expect(err).NotTo(HaveOccurred())
		Expect(registration.BindHost(ctx, js, registration.DefaultStream, "web1", signer)).To(Succeed())
		trust = &registration.Trust{JS: js, Stream: registration.DefaultStream}
	})

	It("keeps one entry per endpoint, drops one when its TTL passes, and withdraws one at once", func() {
		Expect(registration.Publish(ctx, js, web("10.0.0.1", "1h"), signer)).To(Succeed())
		Expect(registration.Publish(ctx, js, web("10.0.0.2", "1h"), signer)).To(Succeed())
		Expect(registration.Publish(ctx, js, web("10.0.0.3", "2s"), signer)).To(Succeed())
		Expect(registration.Publish(ctx, js, web("10.0.0.1", "1h"), signer)).To(Succeed())
		recs, skipped, err := registration.Query(ctx, js, registration.DefaultStream, trust, "production", "http", "web", "*")
		Expect(err).NotTo(HaveOccurred())
		Expect(skipped).To(BeEmpty())
		Expect(addresses(recs)).To(Equal([]string{"10.0.0.1", "10.0.0.2", "10.0.0.3"}))
		Expect(recs[0].Signer).To(Equal(signer.PublicKey()))

		Eventually(func() []string {
			recs, _, err := registration.Query(ctx, js, registration.DefaultStream, trust, "production", "http", "web", "*")
			Expect(err).NotTo(HaveOccurred())
			return addresses(recs)
		}).WithTimeout(15 * time.Second).Should(Equal([]string{"10.0.0.1", "10.0.0.2"}))

		Expect(registration.Withdraw(ctx, js, web("10.0.0.2", "1h"), signer)).To(Succeed())
		recs, _, err = registration.Query(ctx, js, registration.DefaultStream, trust, "*", "*", "*", "*")
		Expect(err).NotTo(HaveOccurred())
		Expect(addresses(recs)).To(Equal([]string{"10.0.0.1"}))
	})

	It("refuses a filter that would reach past its subject token", func() {
		_, _, err := registration.Query(ctx, js, registration.DefaultStream, trust, "production.>", "", "", "")
		Expect(err).To(MatchError(registration.ErrInvalid))
		_, _, err = registration.Query(ctx, js, registration.DefaultStream, trust, "", "", "", "10.0.*")
		Expect(err).To(MatchError(registration.ErrInvalid))
		var fe *registration.FilterError
		Expect(errors.As(err, &fe)).To(BeTrue(), "a refused filter is a *FilterError")
		Expect(fe.Field).To(Equal("address"))
		Expect(fe.Value).To(Equal("10.0.*"))
		Expect(fe.Reason()).To(HavePrefix(`address filter "10.0.*" must be`))
	})

	It("skips an unsigned entry published by a raw client", func() {
		Expect(registration.Publish(ctx, js, web("10.0.0.1", "1h"), signer)).To(Succeed())
		forged := web("10.6.6.6", "1h")
		_, err := js.Publish(ctx, forged.PublisherSubject(signer.PublicKey()), []byte(`{"cluster":"production","service":"web","protocol":"http","address":"10.6.6.6","port":80,"priority":1}`))
		Expect(err).NotTo(HaveOccurred())
		recs, skipped, err := registration.Query(ctx, js, registration.DefaultStream, trust, "", "", "", "")
		Expect(err).NotTo(HaveOccurred())
		Expect(addresses(recs)).To(Equal([]string{"10.0.0.1"}))
		Expect(skipped).To(ConsistOf(registration.Skipped{Subject: forged.PublisherSubject(signer.PublicKey()), Reason: "not signed"}))
	})

	It("drops an entry signed by a valid key that is not the key its subject names, saying so", func() {
		other, err := protocol.NewKeySigner(must(nkeys.CreateUser()))
		Expect(err).NotTo(HaveOccurred())
		// A validly signed entry of another key, copied to this signer's
		// subject, as a client the broker does not lock down could.
		e := web("10.0.0.7", "1h")
		msg, err := registration.NewMsg(e, other)
		Expect(err).NotTo(HaveOccurred())
		msg.Subject = e.PublisherSubject(signer.PublicKey())
		_, err = js.PublishMsg(ctx, msg)
		Expect(err).NotTo(HaveOccurred())
		Expect(registration.Publish(ctx, js, web("10.0.0.1", "1h"), signer)).To(Succeed())
		recs, skipped, err := registration.Query(ctx, js, registration.DefaultStream, trust, "", "", "", "")
		Expect(err).NotTo(HaveOccurred())
		Expect(addresses(recs)).To(Equal([]string{"10.0.0.1"}))
		Expect(skipped).To(HaveLen(1))
		Expect(skipped[0].Subject).To(Equal(e.PublisherSubject(signer.PublicKey())))
		Expect(skipped[0].Reason).To(Equal("signed by " + other.PublicKey() + ", not by the host key " + signer.PublicKey() + " its subject names"))
	})

	It("keeps one record per subject while the entries are being published again during the read", func() {
		signers := make([]*protocol.KeySigner, 3)
		for i := range signers {
			s, err := protocol.NewKeySigner(must(nkeys.CreateUser()))
			Expect(err).NotTo(HaveOccurred())
			signers[i] = s
			Expect(registration.BindHost(ctx, js, registration.DefaultStream, fmt.Sprintf("lb%d", i+1), s)).To(Succeed())
			Expect(registration.Publish(ctx, js, hostWeb(fmt.Sprintf("10.0.0.%d", i+1), fmt.Sprintf("lb%d", i+1)), s)).To(Succeed())
		}
		// Agents publish their entries again at every run (every second
		// with a health check interval of 1s); a consumer delivering the
		// last message per subject also delivers what is published after
		// it was made.
		pctx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := 0; pctx.Err() == nil; i++ {
				_ = registration.Publish(pctx, js, hostWeb(fmt.Sprintf("10.0.0.%d", i%3+1), fmt.Sprintf("lb%d", i%3+1)), signers[i%3])
			}
		}()
		DeferCleanup(func() { stop(); <-done })
		for range 20 {
			recs, skipped, err := registration.Query(ctx, js, registration.DefaultStream, trust, "production", "http", "web", "*")
			Expect(err).NotTo(HaveOccurred())
			Expect(skipped).To(BeEmpty())
			Expect(addresses(recs)).To(Equal([]string{"10.0.0.1", "10.0.0.2", "10.0.0.3"}))
		}
	})

	It("watches publications and removals", func() {
		var (
			mu     sync.Mutex
			events []registration.Event
		)
		wctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			done <- registration.Watch(wctx, js, registration.DefaultStream, trust, "production", "", "", "", func(ev registration.Event) error {
				mu.Lock()
				defer mu.Unlock()
				events = append(events, ev)
				return nil
			})
		}()
		DeferCleanup(func() { cancel(); Eventually(done).WithTimeout(10 * time.Second).Should(Receive(BeNil())) })
		seen := func() []string {
			mu.Lock()
			defer mu.Unlock()
			var out []string
			for _, ev := range events {
				if ev.Record != nil {
					out = append(out, "+"+ev.Record.Address)
				} else {
					out = append(out, "-"+ev.Removed)
				}
			}
			return out
		}
		// The watch starts at new messages: publish until the first is seen.
		Eventually(func() []string {
			Expect(registration.Publish(ctx, js, web("10.0.0.9", "2s"), signer)).To(Succeed())
			return seen()
		}).WithTimeout(10 * time.Second).Should(ContainElement("+10.0.0.9"))
		Eventually(seen).WithTimeout(20 * time.Second).Should(ContainElement(HavePrefix("-")))
	})
})
