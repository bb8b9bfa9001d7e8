package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/agent"
	"github.com/ccm-fleet/ccm/broker"
	"github.com/ccm-fleet/ccm/broker/brokertest"
	"github.com/ccm-fleet/ccm/jsstore"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/providers"
	"github.com/ccm-fleet/ccm/resources/engine"
)

// jsFixture is a broker, a client with JetStream and one running agent.
type jsFixture struct {
	b     *broker.Broker
	nc    *nats.Conn
	js    jetstream.JetStream
	agent *agent.Agent
	stop  func()
}

// startOn starts an agent on b (history set up when history is true).
func startOn(b *broker.Broker, history bool, cfg agent.Config, facts map[string]any) *jsFixture {
	GinkgoHelper()
	connect := func() *nats.Conn {
		nc, err := nats.Connect(b.ClientURL(), nats.ReconnectWait(50*time.Millisecond), nats.MaxReconnects(-1))
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(nc.Close)
		return nc
	}
	f := &jsFixture{b: b, nc: connect()}
	var err error
	f.js, err = jetstream.New(f.nc)
	Expect(err).ToNot(HaveOccurred())
	if history {
		_, err := jsstore.EnsureHistory(context.Background(), f.js, jsstore.HistoryConfig{})
		Expect(err).ToNot(HaveOccurred())
	}
	if cfg.StateDir == "" {
		cfg.StateDir = GinkgoT().TempDir()
	}
	cfg.Insecure = true
	reg, err := providers.Builtin(providers.Options{})
	Expect(err).ToNot(HaveOccurred())
	ready := make(chan struct{})
	f.agent, err = agent.New(cfg, connect(), engine.New(reg), facts, agent.WithReady(func() { close(ready) }))
	Expect(err).ToNot(HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.agent.Run(ctx) }()
	stopped := false
	f.stop = func() {
		if !stopped {
			stopped = true
			cancel()
			Eventually(done).WithTimeout(20 * time.Second).Should(Receive(BeNil()))
		}
	}
	DeferCleanup(f.stop)
	Eventually(ready).WithTimeout(10 * time.Second).Should(BeClosed())
	return f
}

// run sends an ensure of /bin/true and waits for the reply.
func (f *jsFixture) run(id string) *protocol.FleetReply {
	GinkgoHelper()
	b, err := json.Marshal(ensureRequest(id, time.Minute, "exec", map[string]any{"name": "/bin/true"}))
	Expect(err).ToNot(HaveOccurred())
	msg, err := f.nc.Request(protocol.RequestNodeSubject(f.agent.Identity()), b, 10*time.Second)
	Expect(err).ToNot(HaveOccurred())
	reply, err := protocol.DecodeFleetReply(msg.Data, protocol.Limits{})
	Expect(err).ToNot(HaveOccurred())
	return reply
}

// record returns the history record of request id by the agent.
func (f *jsFixture) record(id string) (jsstore.Record, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return jsstore.Get(ctx, f.js, protocol.HistorySubject(id, f.agent.Identity()))
}

func (f *jsFixture) restart(jetStream bool) {
	GinkgoHelper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	Expect(f.b.RestartJetStream(ctx, jetStream)).To(Succeed())
	// The agent is back once its subscriptions are.
	Eventually(func() int {
		most := 0
		for _, c := range f.b.Clients() {
			most = max(most, c.Subscriptions)
		}
		return most
	}).WithTimeout(10 * time.Second).Should(BeNumerically(">=", 3))
}

var historyConfig = agent.Config{Identity: "web-1", HistoryRetry: 50 * time.Millisecond, HistoryTimeout: time.Second, ShutdownTimeout: 5 * time.Second}

var _ = Describe("Agent history", func() {
	It("records each reply at ccm.v1.history.<request>.<identity> with its timing headers", func() {
		f := startOn(brokertest.Start(GinkgoT()), true, historyConfig, map[string]any{"os": "debian"})
		reply := f.run("h1")
		Eventually(func() error { _, err := f.record("h1"); return err }).Should(Succeed())
		rec, _ := f.record("h1")
		got, err := protocol.DecodeFleetReply(rec.Data, protocol.Limits{})
		Expect(err).ToNot(HaveOccurred())
		Expect(got).To(Equal(reply), "the record is the reply")
		received := protocol.ParseHeaderTime(rec.Header.Get(protocol.HeaderReceived))
		replied := protocol.ParseHeaderTime(rec.Header.Get(protocol.HeaderReplied))
		Expect(received).NotTo(BeZero())
		Expect(replied).NotTo(BeTemporally("<", received))
		// The stream holds the record before the agent has its ack.
		Eventually(func() int64 { return f.agent.Stats().Recorded }).Should(BeEquivalentTo(1))
		Expect(f.agent.SpoolStats().Records).To(BeZero())
	})

	It("does not keep records when the history stream does not exist", func() {
		f := startOn(brokertest.Start(GinkgoT()), false, historyConfig, nil)
		f.run("n1")
		Eventually(func() int64 { return f.agent.Stats().NotRecorded }).Should(BeEquivalentTo(1))
		Expect(f.agent.SpoolStats().Records).To(BeZero())
		Expect(f.agent.SpoolDir()).NotTo(BeADirectory())
	})

	It("records again once the history stream is made after a reply found none (it looks again every HistoryRetry)", func() {
		f := startOn(brokertest.Start(GinkgoT()), false, historyConfig, nil)
		f.run("a1")
		Eventually(func() int64 { return f.agent.Stats().NotRecorded }).Should(BeEquivalentTo(1))
		_, err := jsstore.EnsureHistory(context.Background(), f.js, jsstore.HistoryConfig{})
		Expect(err).ToNot(HaveOccurred())
		// The agent's next look finds the stream: from then on each reply
		// is recorded, with no request needed to make it look.
		Eventually(func() error {
			id := fmt.Sprintf("a2-%d", time.Now().UnixNano())
			f.run(id)
			_, err := f.record(id)
			return err
		}).WithTimeout(10 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
		_, err = f.record("a1")
		Expect(errors.Is(err, jetstream.ErrMsgNotFound)).To(BeTrue(), "a reply made while there was no stream is not kept")
	})

	It("keeps replies in a bounded private spool while JetStream is unavailable and sends each once when it is back", func() {
		cfg := historyConfig
		cfg.SpoolMaxRecords = 3
		f := startOn(brokertest.Start(GinkgoT()), true, cfg, nil)
		f.restart(false)
		for _, id := range []string{"s1", "s2", "s3", "s4", "s5"} {
			Expect(f.run(id).Error).To(BeNil(), "the agent still runs and replies")
		}
		Eventually(func() int64 { return f.agent.Stats().Spooled }).Should(BeEquivalentTo(5))
		Expect(f.agent.SpoolStats()).To(And(
			HaveField("Records", 3),
			HaveField("Dropped", BeEquivalentTo(2)),
		))
		dir, err := os.Stat(f.agent.SpoolDir())
		Expect(err).ToNot(HaveOccurred())
		Expect(dir.Mode().Perm()).To(Equal(os.FileMode(0o700)))
		entries, err := os.ReadDir(f.agent.SpoolDir())
		Expect(err).ToNot(HaveOccurred())
		Expect(entries).To(HaveLen(3))
		for _, e := range entries {
			info, err := e.Info()
			Expect(err).ToNot(HaveOccurred())
			Expect(info.Mode().Perm()).To(Equal(os.FileMode(0o600)), e.Name())
		}

		f.restart(true)
		Eventually(func() int { return f.agent.SpoolStats().Records }).WithTimeout(10 * time.Second).Should(BeZero())
		for _, id := range []string{"s3", "s4", "s5"} {
			_, err := f.record(id)
			Expect(err).ToNot(HaveOccurred(), id)
		}
		for _, id := range []string{"s1", "s2"} {
			_, err := f.record(id)
			Expect(errors.Is(err, jetstream.ErrMsgNotFound)).To(BeTrue(), "%s was dropped from the full spool", id)
		}
	})

	It("sends what an earlier run left in the spool, and a record already there (landed past the duplicate window) counts as recorded", func() {
		b := brokertest.Start(GinkgoT())
		cfg := historyConfig
		cfg.StateDir = GinkgoT().TempDir()
		f := startOn(b, true, cfg, nil)
		f.restart(false)
		f.run("p1")
		Eventually(func() int { return f.agent.SpoolStats().Records }).Should(Equal(1))
		f.stop()
		Expect(filepath.Join(cfg.StateDir, agent.SpoolDirName)).To(BeADirectory())

		rctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		Expect(b.Restart(rctx)).To(Succeed()) // no agent to wait for now
		// The record lands by another way first (a late retry), and the
		// stream no longer knows its message id: it was kept two hours
		// ago, past the duplicate window.
		name, err := os.ReadDir(filepath.Join(cfg.StateDir, agent.SpoolDirName))
		Expect(err).ToNot(HaveOccurred())
		file := filepath.Join(cfg.StateDir, agent.SpoolDirName, name[0].Name())
		raw, err := os.ReadFile(file)
		Expect(err).ToNot(HaveOccurred())
		var entry map[string]any
		Expect(json.Unmarshal(raw, &entry)).To(Succeed())
		Expect(entry).To(HaveKey("kept"), "the spool says when it kept the record")
		entry["kept"] = time.Now().Add(-2 * time.Hour)
		raw, err = json.Marshal(entry)
		Expect(err).ToNot(HaveOccurred())
		Expect(os.WriteFile(file, raw, 0o600)).To(Succeed())
		var spooled struct {
			Data []byte `json:"data"`
		}
		Expect(json.Unmarshal(raw, &spooled)).To(Succeed())
		// The client reconnects to the restarted broker in its own time.
		Eventually(func() error {
			pctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			_, err := jsstore.Publish(pctx, f.js, protocol.HistorySubject("p1", "web-1"), "another-id", nil, spooled.Data)
			return err
		}).WithTimeout(30 * time.Second).Should(Succeed())

		g := startOn(b, false, cfg, nil)
		Eventually(func() int { return g.agent.SpoolStats().Records }).WithTimeout(10 * time.Second).Should(BeZero())
		Expect(g.agent.Stats().HistoryDuplicates).To(BeEquivalentTo(1))
		s, err := f.js.Stream(context.Background(), protocol.HistoryStream)
		Expect(err).ToNot(HaveOccurred())
		info, err := s.Info(context.Background(), jetstream.WithSubjectFilter(protocol.HistoryRunSubjects("p1")))
		Expect(err).ToNot(HaveOccurred())
		Expect(info.State.Msgs).To(BeEquivalentTo(1))
	})
})

var _ = Describe("Agent registry", func() {
	entry := func(js jetstream.JetStream, id string) (*protocol.NodeRecord, error) {
		kv, err := js.KeyValue(context.Background(), protocol.NodesBucket)
		if err != nil {
			return nil, err
		}
		e, err := kv.Get(context.Background(), id)
		if err != nil {
			return nil, err
		}
		return protocol.DecodeNodeRecord(e.Value(), protocol.Limits{})
	}

	It("puts its entry before it serves, refreshes it every heartbeat and on new facts, and deletes it on stop", func() {
		cfg := historyConfig
		cfg.Heartbeat = 100 * time.Millisecond
		f := startOn(brokertest.Start(GinkgoT()), false, cfg, map[string]any{"os": "debian", "nested": map[string]any{"a": 1}})
		rec, err := entry(f.js, "web-1")
		Expect(err).ToNot(HaveOccurred(), "present as soon as the agent is ready")
		Expect(rec.Facts).To(HaveKeyWithValue("os", "debian"))
		Expect(rec.Facts).To(HaveKeyWithValue("identity", "web-1"))
		Expect(rec.Facts).NotTo(HaveKey("nested"))
		first := rec.LastSeen
		Eventually(func() time.Time { r, _ := entry(f.js, "web-1"); return r.LastSeen }).Should(BeTemporally(">", first))

		f.agent.UpdateFacts(map[string]any{"os": "debian", "role": "db"})
		Eventually(func() map[string]any { r, _ := entry(f.js, "web-1"); return r.Facts }).Should(HaveKeyWithValue("role", "db"))

		f.stop()
		_, err = entry(f.js, "web-1")
		Expect(err).To(MatchError(jetstream.ErrKeyNotFound))
	})

	It("creates the bucket with its registry_ttl when it does not exist", func() {
		cfg := historyConfig
		cfg.Heartbeat = 500 * time.Millisecond
		cfg.RegistryTTL = 7 * time.Second
		f := startOn(brokertest.Start(GinkgoT()), false, cfg, nil)
		kv, err := f.js.KeyValue(context.Background(), protocol.NodesBucket)
		Expect(err).ToNot(HaveOccurred())
		st, err := kv.Status(context.Background())
		Expect(err).ToNot(HaveOccurred())
		Expect(st.TTL()).To(Equal(7 * time.Second))
	})

	It("lets the entry of an agent that stopped refreshing it expire with the bucket's TTL", func() {
		cfg := historyConfig
		cfg.Heartbeat = 100 * time.Millisecond
		cfg.RegistryTTL = time.Second
		f := startOn(brokertest.Start(GinkgoT()), false, cfg, nil)
		kv, err := f.js.KeyValue(context.Background(), protocol.NodesBucket)
		Expect(err).ToNot(HaveOccurred())
		// A crashed agent: its entry, never refreshed.
		ghost, _ := json.Marshal(&protocol.NodeRecord{Protocol: protocol.NodeProtocol, Identity: "ghost-1"})
		_, err = kv.Put(context.Background(), "ghost-1", ghost)
		Expect(err).ToNot(HaveOccurred())
		Eventually(func() error { _, err := entry(f.js, "ghost-1"); return err }).WithTimeout(10 * time.Second).Should(MatchError(jetstream.ErrKeyNotFound))
		_, err = entry(f.js, "web-1")
		Expect(err).ToNot(HaveOccurred(), "a live agent's entry stays")
	})
})
