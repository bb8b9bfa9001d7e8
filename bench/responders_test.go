package bench_test

import (
	"context"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"

	"github.com/ccm-fleet/ccm/bench"
	"github.com/ccm-fleet/ccm/broker"
	"github.com/ccm-fleet/ccm/protocol"
)

// syncBuffer is a gbytes buffer safe to write from the responders'
// goroutine while the spec reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf *gbytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) Contents() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf.Contents())
}

var _ = Describe("Signed floor responders", func() {
	var (
		nc      *nats.Conn
		trusted *protocol.KeySigner
	)

	BeforeEach(func() {
		br, err := broker.New(broker.Config{Listen: "127.0.0.1:-1"})
		Expect(err).ToNot(HaveOccurred())
		Expect(br.Start(context.Background())).To(Succeed())
		DeferCleanup(func() { _ = br.Shutdown(context.Background()) })

		kp, err := nkeys.CreateUser()
		Expect(err).ToNot(HaveOccurred())
		trusted, err = protocol.NewKeySigner(kp)
		Expect(err).ToNot(HaveOccurred())

		ctx, cancel := context.WithCancel(context.Background())
		out := &syncBuffer{buf: gbytes.NewBuffer()}
		done := make(chan error, 1)
		go func() {
			done <- bench.Responders(ctx, bench.ResponderOptions{
				Server: br.ClientURL(), Count: 2, Subject: "bench.test.signed", ReplyBytes: 300, Trust: trusted.PublicKey(),
			}, out)
		}()
		DeferCleanup(func() {
			cancel()
			Eventually(done).Should(Receive(BeNil()))
		})
		Eventually(out.Contents).Should(ContainSubstring("2 responders ready"))

		nc, err = nats.Connect(br.ClientURL())
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(nc.Close)
	})

	// replies sends body with header to the responders and collects the
	// two replies.
	replies := func(header nats.Header, body []byte) []*nats.Msg {
		inbox := nc.NewInbox()
		ch := make(chan *nats.Msg, 4)
		sub, err := nc.ChanSubscribe(inbox, ch)
		Expect(err).ToNot(HaveOccurred())
		defer func() { _ = sub.Unsubscribe() }()
		m := nats.NewMsg("bench.test.signed")
		m.Reply, m.Header, m.Data = inbox, header, body
		Expect(nc.PublishMsg(m)).To(Succeed())
		var got []*nats.Msg
		Eventually(func() int {
			for {
				select {
				case r := <-ch:
					got = append(got, r)
				default:
					return len(got)
				}
			}
		}).WithTimeout(10 * time.Second).Should(Equal(2))
		return got
	}

	It("answers a request signed by the trusted key with replies each signed by its own key", func() {
		body := []byte(`{"request":"signed-floor-canary-1"}`)
		got := replies(nats.Header(trusted.Header(body)), body)
		signers := map[string]bool{}
		for _, r := range got {
			signer := r.Header.Get(protocol.HeaderSigner)
			Expect(protocol.Verify(r.Data, signer, r.Header.Get(protocol.HeaderSignature))).To(Succeed())
			Expect(signer).ToNot(Equal(trusted.PublicKey()))
			Expect(r.Data).To(HaveLen(300))
			signers[signer] = true
		}
		Expect(signers).To(HaveLen(2), "each responder signs with a key of its own, as each agent does")
	})

	It("refuses, unsigned, a request signed by another key, a forged signature and an unsigned request", func() {
		other, err := nkeys.CreateUser()
		Expect(err).ToNot(HaveOccurred())
		otherKeys, err := protocol.NewKeySigner(other)
		Expect(err).ToNot(HaveOccurred())
		body := []byte(`{"request":"signed-floor-canary-2"}`)
		forged := nats.Header(trusted.Header([]byte(`{"request":"something else"}`)))
		for what, h := range map[string]nats.Header{
			"another key": nats.Header(otherKeys.Header(body)),
			"forged":      forged,
			"unsigned":    nil,
		} {
			for _, r := range replies(h, body) {
				Expect(r.Header.Get(protocol.HeaderSignature)).To(BeEmpty(), what)
				Expect(string(r.Data)).To(ContainSubstring("does not verify"), what)
				Expect(string(r.Data)).ToNot(ContainSubstring("filler"), what)
			}
		}
	})

	It("refuses a trusted key that is not an nkeys user public key", func() {
		err := bench.Responders(context.Background(), bench.ResponderOptions{
			Server: "nats://127.0.0.1:1", Count: 1, Subject: "x", ReplyBytes: 10, Trust: "not-a-key",
		}, GinkgoWriter)
		Expect(err).To(MatchError(protocol.ErrSigner))
	})
})
