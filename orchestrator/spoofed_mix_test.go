package orchestrator_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"sort"
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

// warnLog is a log sink shared by the client's goroutines.
type warnLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *warnLog) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// spoofedIdentities are the identities of the "not signed by the key"
// warnings logged so far, sorted.
func (b *warnLog) spoofedIdentities() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var ids []string
	for _, line := range bytes.Split(b.buf.Bytes(), []byte("\n")) {
		var rec map[string]any
		if json.Unmarshal(line, &rec) != nil {
			continue
		}
		if rec["msg"] == "ignored a reply not signed by the key of the identity it claims" {
			ids = append(ids, rec["identity"].(string))
		}
	}
	sort.Strings(ids)
	return ids
}

func (b *warnLog) reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Reset()
}

var _ = Describe("Client.Run with spoofed replies among good ones", func() {
	newKey := func() *protocol.KeySigner {
		kp, err := nkeys.CreateUser()
		Expect(err).NotTo(HaveOccurred())
		s, err := protocol.NewKeySigner(kp)
		Expect(err).NotTo(HaveOccurred())
		return s
	}

	It("counts replied, spoofed and unverified exactly and names the spoofed, run after run with the keys cached", func() {
		ctx := context.Background()
		b := brokertest.Start(GinkgoT())
		agentNC, err := nats.Connect(b.ClientURL())
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(agentNC.Close)
		js, err := jetstream.New(agentNC)
		Expect(err).NotTo(HaveOccurred())
		_, err = jsstore.EnsureHistory(ctx, js, jsstore.HistoryConfig{})
		Expect(err).NotTo(HaveOccurred())
		kv, err := jsstore.EnsureRegistry(ctx, js, jsstore.RegistryConfig{})
		Expect(err).NotTo(HaveOccurred())

		// h1..h8 are registered with their keys; u9 is not (unverified).
		keys := map[string]*protocol.KeySigner{}
		for _, id := range []string{"h1", "h2", "h3", "h4", "h5", "h6", "h7", "h8"} {
			keys[id] = newKey()
			rec, err := json.Marshal(protocol.NodeRecord{
				Protocol: protocol.NodeProtocol, Identity: id, Facts: map[string]any{"identity": id},
				PublicKey: keys[id].PublicKey(), Started: time.Now(), LastSeen: time.Now(),
			})
			Expect(err).NotTo(HaveOccurred())
			_, err = kv.Put(ctx, id, rec)
			Expect(err).NotTo(HaveOccurred())
		}
		impostor := newKey()

		respond := func(m *nats.Msg, data []byte, header map[string][]string) {
			out := nats.NewMsg(m.Reply)
			out.Data = data
			if header != nil {
				out.Header = nats.Header(header)
			}
			Expect(agentNC.PublishMsg(out)).To(Succeed())
		}
		// Each host's responder: what it sends for a request.
		behaviour := map[string]func(m *nats.Msg, reqID string){
			"h5": func(m *nats.Msg, reqID string) { // signed by another key
				data := fleetReply(reqID, "h5")
				respond(m, data, impostor.Header(data))
			},
			"h6": func(m *nats.Msg, reqID string) { // h6's key named, signature broken
				data := fleetReply(reqID, "h6")
				h := keys["h6"].Header(data)
				sig := []byte(h[protocol.HeaderSignature][0])
				sig[3] ^= 1
				h[protocol.HeaderSignature] = []string{string(sig)}
				respond(m, data, h)
			},
			"h7": func(m *nats.Msg, reqID string) { // h7's signature of other bytes
				data := fleetReply(reqID, "h7")
				h := keys["h7"].Header(append([]byte(" "), data...))
				respond(m, data, h)
			},
			"h8": func(m *nats.Msg, reqID string) { // a forgery, then the real reply
				data := fleetReply(reqID, "h8")
				respond(m, data, nil)
				respond(m, data, keys["h8"].Header(data))
			},
			"u9": func(m *nats.Msg, reqID string) { // no key known: unsigned
				respond(m, fleetReply(reqID, "u9"), nil)
			},
		}
		for _, id := range []string{"h1", "h2", "h3", "h4"} {
			behaviour[id] = func(m *nats.Msg, reqID string) {
				data := fleetReply(reqID, id)
				respond(m, data, keys[id].Header(data))
			}
		}
		hosts := make([]string, 0, len(behaviour))
		for id, act := range behaviour {
			hosts = append(hosts, id)
			sub, err := agentNC.Subscribe(protocol.RequestNodeSubject(id), func(m *nats.Msg) {
				req, err := protocol.DecodeFleetRequest(m.Data, protocol.Limits{})
				if err != nil {
					return
				}
				act(m, req.ID)
			})
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(sub.Unsubscribe)
		}
		Expect(agentNC.Flush()).To(Succeed())
		sort.Strings(hosts)

		logs := &warnLog{}
		nc, err := nats.Connect(b.ClientURL())
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(nc.Close)
		client := orchestrator.New(nc, orchestrator.WithLogger(slog.New(slog.NewJSONHandler(logs, nil))))

		for run := range 2 {
			logs.reset()
			res, err := client.Run(ctx, orchestrator.Request{
				Hosts:   hosts,
				Timeout: 3 * time.Second,
				Ensure:  ensureRequest("exec", map[string]any{"name": "/bin/true"}),
			})
			Expect(err).NotTo(HaveOccurred(), "run %d", run)
			outcomes := map[string]string{}
			for _, h := range res.Hosts {
				outcomes[h.Identity] = h.Outcome
			}
			Expect(outcomes).To(Equal(map[string]string{
				"h1": "ok", "h2": "ok", "h3": "ok", "h4": "ok",
				"h5": "no_reply", "h6": "no_reply", "h7": "no_reply",
				"h8": "ok", "u9": "ok",
			}), "run %d", run)
			Expect(res.Replied).To(Equal(6), "run %d", run)
			Expect(res.Spoofed).To(Equal(4), "run %d", run)
			Expect(res.Unverified).To(Equal(1), "run %d: u9 has no key", run)
			Expect(res.NoReply).To(Equal([]string{"h5", "h6", "h7"}), "run %d", run)
			Expect(res.Duplicates).To(BeZero(), "run %d", run)
			Expect(logs.spoofedIdentities()).To(Equal([]string{"h5", "h6", "h7", "h8"}), "run %d", run)
		}
	})
})
