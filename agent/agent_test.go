package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/ccm-fleet/ccm/agent"
	"github.com/ccm-fleet/ccm/broker/brokertest"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/providers"
	"github.com/ccm-fleet/ccm/resources/engine"
)

// fixture is one broker, one agent and a client connection.
type fixture struct {
	nc     *nats.Conn
	agent  *agent.Agent
	cancel context.CancelFunc
	done   chan error
	dir    string
	once   sync.Once
	err    error
}

// stop cancels the agent and waits for Run to return, once.
func (f *fixture) stop() error {
	f.once.Do(func() {
		f.cancel()
		Eventually(f.done).WithTimeout(10 * time.Second).Should(Receive(&f.err))
	})
	return f.err
}

// startAgent starts an agent that takes unsigned requests unless cfg names
// a policy file.
func startAgent(cfg agent.Config, facts map[string]any, opts ...agent.Option) *fixture {
	if cfg.Policy == "" {
		cfg.Insecure = true
	}
	return startAgentAs(cfg, facts, opts...)
}

// startAgentAs starts an agent with cfg as given (a state directory of its
// own when cfg has none).
func startAgentAs(cfg agent.Config, facts map[string]any, opts ...agent.Option) *fixture {
	if cfg.StateDir == "" {
		cfg.StateDir = GinkgoT().TempDir()
	}
	b := brokertest.Start(GinkgoT())
	connect := func() *nats.Conn {
		nc, err := nats.Connect(b.ClientURL())
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(nc.Close)
		return nc
	}
	reg, err := providers.Builtin(providers.Options{})
	Expect(err).ToNot(HaveOccurred())
	ready := make(chan struct{})
	a, err := agent.New(cfg, connect(), engine.New(reg), facts, append(opts, agent.WithReady(func() { close(ready) }))...)
	Expect(err).ToNot(HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	f := &fixture{nc: connect(), agent: a, cancel: cancel, done: make(chan error, 1), dir: GinkgoT().TempDir()}
	go func() { f.done <- a.Run(ctx) }()
	DeferCleanup(func() { Expect(f.stop()).To(Succeed()) })
	Eventually(ready).WithTimeout(5 * time.Second).Should(BeClosed())
	return f
}

func ensureRequest(id string, ttl time.Duration, typ string, props map[string]any) *protocol.FleetRequest {
	req := protocol.NewFleetRequest(id, time.Now(), ttl)
	er, err := protocol.NewEnsureRequest(typ, props)
	Expect(err).ToNot(HaveOccurred())
	req.Ensure = er
	return req
}

// ask sends raw bytes to subject and waits for one reply.
func (f *fixture) ask(subject string, data []byte) *protocol.FleetReply {
	msg, err := f.nc.Request(subject, data, 10*time.Second)
	Expect(err).ToNot(HaveOccurred())
	reply, err := protocol.DecodeFleetReply(msg.Data, protocol.Limits{})
	Expect(err).ToNot(HaveOccurred())
	return reply
}

func (f *fixture) send(subject string, req *protocol.FleetRequest) *protocol.FleetReply {
	b, err := json.Marshal(req)
	Expect(err).ToNot(HaveOccurred())
	return f.ask(subject, b)
}

var _ = Describe("Agent", func() {
	facts := map[string]any{"os": "debian", "platform": "debian", "role": "web", "cpus": 4}

	It("applies an ensure request on its node subject and replies with the event", func() {
		f := startAgent(agent.Config{Identity: "web-1"}, facts)
		file := filepath.Join(f.dir, "motd")
		reply := f.send(protocol.RequestNodeSubject("web-1"), ensureRequest("req1", time.Minute, "file", map[string]any{
			"name": file, "content": "host {{ lookup('facts.identity') }}\n", "owner": "root", "group": "root", "mode": "0644",
		}))
		Expect(reply.Error).To(BeNil())
		Expect(reply.Identity).To(Equal("web-1"))
		Expect(reply.RequestID).To(Equal("req1"))
		Expect(reply.Events).To(HaveLen(1))
		Expect(reply.Events[0].Changed).To(BeTrue())
		Expect(os.ReadFile(file)).To(Equal([]byte("host web-1\n")))
	})

	It("listens on all, its node subject and its subject facts, and announces itself to discovery", func() {
		f := startAgent(agent.Config{Identity: "web-1"}, facts)
		req, disc := f.agent.Subjects()
		Expect(req).To(ConsistOf("ccm.v1.req.all", "ccm.v1.req.node.web-1", "ccm.v1.req.fact.os.debian", "ccm.v1.req.fact.platform.debian", "ccm.v1.req.fact.role.web"))
		Expect(disc).To(ContainElement("ccm.v1.disc.fact.role.web"))

		for _, subject := range req {
			r := f.send(subject, ensureRequest("r"+fmt.Sprint(len(subject)), time.Minute, "exec", map[string]any{"name": "/bin/true"}))
			Expect(r.Error).To(BeNil(), subject)
		}

		b, _ := json.Marshal(protocol.NewDiscoveryRequest("d1", nil))
		msg, err := f.nc.Request(protocol.DiscoverySubjectAll, b, 5*time.Second)
		Expect(err).ToNot(HaveOccurred())
		dr, err := protocol.DecodeDiscoveryReply(msg.Data, protocol.Limits{})
		Expect(err).ToNot(HaveOccurred())
		Expect(dr.Identity).To(Equal("web-1"))
		Expect(dr.Facts).To(HaveKeyWithValue("role", "web"))
		Expect(dr.Facts).ToNot(HaveKey("host"))
	})

	It("does not execute a request whose filter or targets leave it out", func() {
		f := startAgent(agent.Config{Identity: "web-1"}, facts)
		canary := filepath.Join(f.dir, "canary")
		notMe, err := protocol.ParseFilter([]string{"role=db"})
		Expect(err).ToNot(HaveOccurred())
		r := ensureRequest("f1", time.Minute, "exec", map[string]any{"name": "/bin/touch " + canary})
		r.Filter = notMe
		b, _ := json.Marshal(r)
		Expect(f.nc.Publish(protocol.RequestSubjectAll, b)).To(Succeed())
		r2 := ensureRequest("f2", time.Minute, "exec", map[string]any{"name": "/bin/touch " + canary})
		r2.Targets = []string{"web-2"}
		b, _ = json.Marshal(r2)
		Expect(f.nc.Publish(protocol.RequestSubjectAll, b)).To(Succeed())
		Eventually(func() int64 { return f.agent.Stats().Ignored }).Should(Equal(int64(2)))
		Expect(canary).ToNot(BeAnExistingFile())
	})

	It("refuses an expired request without executing it", func() {
		f := startAgent(agent.Config{Identity: "web-1"}, facts)
		canary := filepath.Join(f.dir, "canary")
		r := ensureRequest("old1", time.Second, "exec", map[string]any{"name": "/bin/touch " + canary})
		r.Created = time.Now().Add(-time.Hour)
		reply := f.send(protocol.RequestNodeSubject("web-1"), r)
		Expect(reply.Error).ToNot(BeNil())
		Expect(reply.Error.Code).To(Equal(protocol.CodeExpired))
		Expect(canary).ToNot(BeAnExistingFile())
	})

	It("applies its default TTL to a request that gives none", func() {
		f := startAgent(agent.Config{Identity: "web-1", DefaultTTL: time.Second}, facts)
		canary := filepath.Join(f.dir, "canary")
		r := ensureRequest("nottl", 0, "exec", map[string]any{"name": "/bin/touch " + canary})
		r.Created = time.Now().Add(-time.Minute)
		reply := f.send(protocol.RequestNodeSubject("web-1"), r)
		Expect(reply.Error).ToNot(BeNil())
		Expect(reply.Error.Code).To(Equal(protocol.CodeExpired))
		Expect(canary).ToNot(BeAnExistingFile())

		r = ensureRequest("nottl2", 0, "exec", map[string]any{"name": "/bin/touch " + canary})
		reply = f.send(protocol.RequestNodeSubject("web-1"), r)
		Expect(reply.Error).To(BeNil())
		Expect(canary).To(BeAnExistingFile())
	})

	It("answers 200 malformed requests with bad_request and keeps serving", func() {
		f := startAgent(agent.Config{Identity: "web-1"}, facts)
		bad := [][]byte{
			[]byte(`not json at all`),
			[]byte(`{"protocol":"io.choria.ccm.v1.fleet.request"}`),
			[]byte(`{"protocol":"io.choria.ccm.v1.fleet.request","id":"x1","created":"2026-01-01T00:00:00Z","ttl":"1m","bogus":1}`),
			[]byte(`{"protocol":"io.choria.ccm.v1.fleet.request","id":"x2","created":"2026-01-01T00:00:00Z","ttl":"1m","noop":"yes"}`),
			{0xff, 0xfe, 0x00},
		}
		for i := range 200 {
			reply := f.ask(protocol.RequestNodeSubject("web-1"), bad[i%len(bad)])
			Expect(reply.Error).ToNot(BeNil())
			Expect(reply.Error.Code).To(Equal(protocol.CodeBadRequest))
		}
		reply := f.send(protocol.RequestNodeSubject("web-1"), ensureRequest("good", time.Minute, "exec", map[string]any{"name": "/bin/true"}))
		Expect(reply.Error).To(BeNil())
		Expect(reply.Events[0].Failed).To(BeFalse())
		Expect(f.agent.Stats().BadRequest).To(Equal(int64(200)))
	})

	It("answers a request whose resource is invalid with bad_request naming the problem", func() {
		f := startAgent(agent.Config{Identity: "web-1"}, facts)
		reply := f.send(protocol.RequestNodeSubject("web-1"), ensureRequest("inv", time.Minute, "file", map[string]any{"name": "relative", "mode": "0644"}))
		Expect(reply.Error).ToNot(BeNil())
		Expect(reply.Error.Code).To(Equal(protocol.CodeBadRequest))
		Expect(reply.Error.Message).To(ContainSubstring("absolute"))
		Expect(errors.Is(reply.Error, &protocol.Error{Code: protocol.CodeBadRequest, Field: "ensure.properties.name"})).To(BeTrue(), "%+v", reply.Error)
	})

	It("names the property that failed validation as the answer's field, its message unchanged", func() {
		f := startAgent(agent.Config{Identity: "web-1"}, facts)
		file := filepath.Join(f.dir, "m")
		reply := f.send(protocol.RequestNodeSubject("web-1"), ensureRequest("mode", time.Minute, "file", map[string]any{
			"name": file, "content": "x", "owner": "root", "group": "root", "mode": "0888"}))
		Expect(reply.Error).ToNot(BeNil())
		Expect(errors.Is(reply.Error, &protocol.Error{Code: protocol.CodeBadRequest, Field: "ensure.properties.mode"})).To(BeTrue(), "%+v", reply.Error)
		Expect(reply.Error.Message).To(Equal("file#" + file + `: invalid resource: property mode: "0888" is not an octal number: invalid digit '8'`))

		// A template makes the properties decode from their map: the same field.
		reply = f.send(protocol.RequestNodeSubject("web-1"), ensureRequest("mode2", time.Minute, "file", map[string]any{
			"name": file, "content": "{{ lookup('facts.role') }}", "owner": "root", "group": "root", "mode": 644}))
		Expect(reply.Error).ToNot(BeNil())
		Expect(errors.Is(reply.Error, &protocol.Error{Code: protocol.CodeBadRequest, Field: "ensure.properties.mode"})).To(BeTrue(), "%+v", reply.Error)
		Expect(file).ToNot(BeAnExistingFile())
	})

	It("does not let remote templates read the environment", func() {
		f := startAgent(agent.Config{Identity: "web-1"}, facts)
		reply := f.send(protocol.RequestNodeSubject("web-1"), ensureRequest("env", time.Minute, "file", map[string]any{
			"name": filepath.Join(f.dir, "env"), "content": "{{ lookup('environ.HOME') }}", "owner": "root", "group": "root", "mode": "0644"}))
		Expect(reply.Error).ToNot(BeNil())
		Expect(reply.Error.Message).To(ContainSubstring("not available here"))
		Expect(filepath.Join(f.dir, "env")).ToNot(BeAnExistingFile())
	})

	It("answers busy beyond its queue", func() {
		f := startAgent(agent.Config{Identity: "web-1", MaxConcurrent: 1, QueueLength: 1}, facts)
		inbox := nats.NewInbox()
		replies := make(chan *nats.Msg, 10)
		sub, err := f.nc.ChanSubscribe(inbox, replies)
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(sub.Unsubscribe)
		for i := range 4 {
			b, _ := json.Marshal(ensureRequest(fmt.Sprintf("slow%d", i), time.Minute, "exec", map[string]any{"name": "/bin/sleep 0.5"}))
			Expect(f.nc.PublishMsg(&nats.Msg{Subject: protocol.RequestNodeSubject("web-1"), Reply: inbox, Data: b})).To(Succeed())
		}
		codes := map[protocol.Code]int{}
		for range 4 {
			var m *nats.Msg
			Eventually(replies).WithTimeout(10 * time.Second).Should(Receive(&m))
			r, err := protocol.DecodeFleetReply(m.Data, protocol.Limits{})
			Expect(err).ToNot(HaveOccurred())
			if r.Error != nil {
				codes[r.Error.Code]++
			} else {
				codes["ok"]++
			}
		}
		Expect(codes[protocol.CodeBusy]).To(BeNumerically(">=", 1))
		Expect(codes["ok"]).To(BeNumerically(">=", 2))
		Expect(codes[protocol.CodeBusy] + codes["ok"]).To(Equal(4))
	})

	It("finishes accepted work when stopped", func() {
		f := startAgent(agent.Config{Identity: "web-1"}, facts)
		marker := filepath.Join(f.dir, "done")
		inbox := nats.NewInbox()
		replies := make(chan *nats.Msg, 1)
		sub, err := f.nc.ChanSubscribe(inbox, replies)
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(sub.Unsubscribe)
		b, _ := json.Marshal(ensureRequest("drain", time.Minute, "exec", map[string]any{"name": "/bin/sh -c 'sleep 0.5; touch " + marker + "'"}))
		Expect(f.nc.PublishMsg(&nats.Msg{Subject: protocol.RequestNodeSubject("web-1"), Reply: inbox, Data: b})).To(Succeed())
		Eventually(func() int64 { return f.agent.Stats().Received }).Should(Equal(int64(1)))

		Expect(f.stop()).To(Succeed())
		Expect(marker).To(BeAnExistingFile(), "the accepted request ran to the end")
		var m *nats.Msg
		Eventually(replies).Should(Receive(&m))
		r, err := protocol.DecodeFleetReply(m.Data, protocol.Limits{})
		Expect(err).ToNot(HaveOccurred())
		Expect(r.Error).To(BeNil())
		Expect(r.Events[0].Changed).To(BeTrue())
	})
})

var _ = Describe("Agent metrics", func() {
	It("counts requests by outcome and resources by type and outcome", func() {
		reg := prometheus.NewRegistry()
		m, err := agent.NewMetrics(reg)
		Expect(err).ToNot(HaveOccurred())
		f := startAgent(agent.Config{Identity: "web-1"}, map[string]any{"os": "debian"}, agent.WithMetrics(m))
		f.send(protocol.RequestNodeSubject("web-1"), ensureRequest("m1", time.Minute, "exec", map[string]any{"name": "/bin/true"}))
		f.ask(protocol.RequestNodeSubject("web-1"), []byte("garbage"))

		Expect(testutil.ToFloat64(m.RequestsCounter().WithLabelValues("executed"))).To(Equal(1.0))
		Expect(testutil.ToFloat64(m.RequestsCounter().WithLabelValues("error"))).To(Equal(1.0))
		Expect(testutil.ToFloat64(m.ErrorsCounter().WithLabelValues("bad_request"))).To(Equal(1.0))
		Expect(testutil.ToFloat64(m.ResourcesCounter().WithLabelValues("exec", "changed"))).To(Equal(1.0))
		n, err := testutil.GatherAndCount(reg, "ccm_agent_request_duration_seconds")
		Expect(err).ToNot(HaveOccurred())
		Expect(n).To(Equal(1))
	})

	It("has every label set from the start, build information, connection, spool and last request", func() {
		reg := prometheus.NewRegistry()
		m, err := agent.NewMetrics(reg)
		Expect(err).ToNot(HaveOccurred())
		Expect(m.Healthy()).To(BeFalse(), "no agent runs yet")
		// Before any request: every outcome, code, type and resource outcome is there at 0.
		n, err := testutil.GatherAndCount(reg, "ccm_agent_requests_total")
		Expect(err).ToNot(HaveOccurred())
		Expect(n).To(Equal(3))
		n, err = testutil.GatherAndCount(reg, "ccm_agent_request_errors_total")
		Expect(err).ToNot(HaveOccurred())
		Expect(n).To(Equal(len(protocol.Codes)))
		n, err = testutil.GatherAndCount(reg, "ccm_agent_resources_total")
		Expect(err).ToNot(HaveOccurred())
		Expect(n).To(Equal(6 * len(protocol.Types)))

		f := startAgent(agent.Config{Identity: "web-1"}, map[string]any{"os": "debian"}, agent.WithMetrics(m), agent.WithVersion("1.2.3"))
		Expect(m.Healthy()).To(BeTrue())
		Expect(testutil.CollectAndCompare(reg, strings.NewReader(`
# HELP ccm_agent_nats_connected 1 while the agent is connected to NATS, 0 otherwise.
# TYPE ccm_agent_nats_connected gauge
ccm_agent_nats_connected 1
# HELP ccm_agent_spool_records History records kept in the spool until JetStream takes them.
# TYPE ccm_agent_spool_records gauge
ccm_agent_spool_records 0
# HELP ccm_agent_last_request_timestamp_seconds When the last request was run without a request-level error (Unix seconds; 0: none yet).
# TYPE ccm_agent_last_request_timestamp_seconds gauge
ccm_agent_last_request_timestamp_seconds 0
`), "ccm_agent_nats_connected", "ccm_agent_spool_records", "ccm_agent_last_request_timestamp_seconds")).To(Succeed())
		n, err = testutil.GatherAndCount(reg, "ccm_agent_build_info")
		Expect(err).ToNot(HaveOccurred())
		Expect(n).To(Equal(1))
		Expect(testutil.ToFloat64(m.BuildInfo().WithLabelValues("1.2.3", runtime.Version()))).To(Equal(1.0))

		before := time.Now().Unix()
		f.send(protocol.RequestNodeSubject("web-1"), ensureRequest("m2", time.Minute, "exec", map[string]any{"name": "/bin/true"}))
		Expect(testutil.ToFloat64(m.LastRequest())).To(BeNumerically(">=", before))
		Expect(f.stop()).To(Succeed())
		f.nc.Close()
	})
})
