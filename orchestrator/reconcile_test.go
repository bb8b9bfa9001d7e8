package orchestrator_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/broker/brokertest"
	"github.com/ccm-fleet/ccm/jsstore"
	"github.com/ccm-fleet/ccm/orchestrator"
	"github.com/ccm-fleet/ccm/protocol"
)

var _ = Describe("Client.Run when its connection comes back during a run", func() {
	connect := func(url string) *nats.Conn {
		nc, err := nats.Connect(url, nats.ReconnectWait(20*time.Millisecond), nats.MaxReconnects(-1))
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(nc.Close)
		return nc
	}
	newKey := func() *protocol.KeySigner {
		kp, err := nkeys.CreateUser()
		Expect(err).NotTo(HaveOccurred())
		s, err := protocol.NewKeySigner(kp)
		Expect(err).NotTo(HaveOccurred())
		return s
	}

	It("takes the replies lost meanwhile from history, verified like live replies and once per host", func() {
		ctx := context.Background()
		b := brokertest.Start(GinkgoT())
		agentNC := connect(b.ClientURL())
		js, err := jetstream.New(agentNC)
		Expect(err).NotTo(HaveOccurred())
		_, err = jsstore.EnsureHistory(ctx, js, jsstore.HistoryConfig{})
		Expect(err).NotTo(HaveOccurred())
		kv, err := jsstore.EnsureRegistry(ctx, js, jsstore.RegistryConfig{})
		Expect(err).NotTo(HaveOccurred())

		// ghost-3 and ghost-4 have keys in the registry: their records
		// must be signed by them.
		key3, key4, impostor := newKey(), newKey(), newKey()
		for id, key := range map[string]*protocol.KeySigner{"ghost-3": key3, "ghost-4": key4} {
			rec, err := json.Marshal(protocol.NodeRecord{
				Protocol: protocol.NodeProtocol, Identity: id, Facts: map[string]any{"identity": id},
				PublicKey: key.PublicKey(), Started: time.Now(), LastSeen: time.Now(),
			})
			Expect(err).NotTo(HaveOccurred())
			_, err = kv.Put(ctx, id, rec)
			Expect(err).NotTo(HaveOccurred())
		}

		// ghost-1 replies live; the others' replies are "lost".
		ids := make(chan string, 1)
		sub, err := agentNC.Subscribe(protocol.RequestNodeSubject("ghost-1"), func(m *nats.Msg) {
			req, err := protocol.DecodeFleetRequest(m.Data, protocol.Limits{})
			if err != nil {
				return
			}
			_ = m.Respond(fleetReply(req.ID, "ghost-1"))
			select {
			case ids <- req.ID:
			default:
			}
		})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(sub.Unsubscribe)
		Expect(agentNC.Flush()).To(Succeed())

		client := orchestrator.New(connect(b.ClientURL()), orchestrator.WithLogger(slog.New(slog.NewTextHandler(GinkgoWriter, nil))))
		live := make(chan struct{})
		var once sync.Once
		type outcome struct {
			res *orchestrator.Result
			err error
		}
		done := make(chan outcome, 1)
		go func() {
			defer GinkgoRecover()
			res, err := client.Run(ctx, orchestrator.Request{
				Hosts:   []string{"ghost-1", "ghost-2", "ghost-3", "ghost-4"},
				Timeout: 8 * time.Second,
				Ensure:  ensureRequest("exec", map[string]any{"name": "/bin/true"}),
				OnReply: func(h orchestrator.HostResult) {
					if h.Identity == "ghost-1" {
						once.Do(func() { close(live) })
					}
				},
			})
			done <- outcome{res, err}
		}()
		var id string
		Eventually(ids).WithTimeout(10 * time.Second).Should(Receive(&id))
		Eventually(live).WithTimeout(10 * time.Second).Should(BeClosed())

		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		Expect(b.Restart(rctx)).To(Succeed())

		record := func(identity string, sign *protocol.KeySigner) {
			data := fleetReply(id, identity)
			var header nats.Header
			if sign != nil {
				header = nats.Header(sign.Header(data))
			}
			Eventually(func() error {
				pctx, cancel := context.WithTimeout(ctx, time.Second)
				defer cancel()
				_, err := jsstore.Publish(pctx, js, protocol.HistorySubject(id, identity), protocol.HistoryMsgID(id, identity), header, data)
				return err
			}).WithTimeout(20 * time.Second).Should(Succeed())
		}
		record("ghost-1", nil)      // also replied live: counts once
		record("ghost-2", nil)      // no key known: taken, unverified
		record("ghost-3", impostor) // not signed by ghost-3's key: not taken
		record("ghost-4", key4)     // signed by its key: taken

		var out outcome
		Eventually(done).WithTimeout(30 * time.Second).Should(Receive(&out))
		Expect(out.err).NotTo(HaveOccurred())
		res := out.res
		sources := map[string]string{}
		for _, h := range res.Hosts {
			sources[h.Identity] = h.Source + "/" + h.Outcome
		}
		Expect(sources).To(Equal(map[string]string{
			"ghost-1": "/ok",
			"ghost-2": "history/ok",
			"ghost-3": "/no_reply",
			"ghost-4": "history/ok",
		}))
		Expect(res.Replied).To(Equal(3))
		Expect(res.NoReply).To(Equal([]string{"ghost-3"}))
		Expect(res.Summary.FromHistory).To(Equal(2))
		Expect(res.Duplicates).To(BeZero(), "a host in live replies and in history counts once")
		Expect(res.Spoofed).To(Equal(1))
		Expect(res.Unverified).To(Equal(2), "ghost-1 live and ghost-2 from history had no key to check")
		Expect(res.Reconnects).To(BeNumerically(">=", 1))
		Expect(res.Unconfirmed).To(BeEmpty())
		Expect(res.ExitCode).To(Equal(protocol.ExitNoReply))

		doc, err := json.Marshal(res)
		Expect(err).NotTo(HaveOccurred())
		var m map[string]any
		Expect(json.Unmarshal(doc, &m)).To(Succeed())
		Expect(m["summary"]).To(HaveKeyWithValue("from_history", BeNumerically("==", 2)))
		Expect(m["hosts"]).To(ContainElement(And(HaveKeyWithValue("identity", "ghost-2"), HaveKeyWithValue("source", "history"))))
		Expect(m["hosts"]).To(ContainElement(And(HaveKeyWithValue("identity", "ghost-1"), Not(HaveKey("source")))))
	})
})
