package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/agent"
	"github.com/ccm-fleet/ccm/broker/brokertest"
	"github.com/ccm-fleet/ccm/jsstore"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/providers"
	"github.com/ccm-fleet/ccm/providers/runner"
	"github.com/ccm-fleet/ccm/resources/engine"
)

// syncBuffer is a log sink safe for the agent's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// leakFixture is an agent with history whose engine and agent log to one
// captured handler at debug level: every place a canary could leave.
type leakFixture struct {
	*fixture
	js    jetstream.JetStream
	log   *syncBuffer
	state string
}

func startLeakAgent() *leakFixture {
	GinkgoHelper()
	b := brokertest.Start(GinkgoT())
	connect := func() *nats.Conn {
		nc, err := nats.Connect(b.ClientURL())
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(nc.Close)
		return nc
	}
	lf := &leakFixture{log: &syncBuffer{}, state: GinkgoT().TempDir()}
	nc := connect()
	var err error
	lf.js, err = jetstream.New(nc)
	Expect(err).ToNot(HaveOccurred())
	_, err = jsstore.EnsureHistory(context.Background(), lf.js, jsstore.HistoryConfig{})
	Expect(err).ToNot(HaveOccurred())
	log := slog.New(slog.NewJSONHandler(lf.log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	// The providers log to the same handler: their own lines about a
	// resource must pass the redaction step too.
	reg, err := providers.Builtin(providers.Options{Log: log})
	Expect(err).ToNot(HaveOccurred())
	ready := make(chan struct{})
	cfg := agent.Config{Identity: "db-1", StateDir: lf.state, Insecure: true}
	a, err := agent.New(cfg, connect(), engine.New(reg, engine.WithLogger(log), engine.WithHealthRunner(providers.HealthRunner(runner.Exec{}))), map[string]any{"os": "debian"},
		agent.WithLogger(log), agent.WithReady(func() { close(ready) }))
	Expect(err).ToNot(HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	lf.fixture = &fixture{nc: nc, agent: a, cancel: cancel, done: make(chan error, 1), dir: GinkgoT().TempDir()}
	go func() { lf.done <- a.Run(ctx) }()
	DeferCleanup(func() { Expect(lf.stop()).To(Succeed()) })
	Eventually(ready).WithTimeout(5 * time.Second).Should(BeClosed())
	return lf
}

// expectNoCanary checks the reply, its history record, the audit log and
// the log output of request id for canary; the log must hold logged (a
// line about the resource, so the check looks at the right output).
func (lf *leakFixture) expectNoCanary(id string, reply *protocol.FleetReply, canary, logged string) {
	GinkgoHelper()
	Expect(fmt.Sprintf("%+v", reply)).ToNot(ContainSubstring(canary), "the reply")
	raw, err := reply.Encode()
	Expect(err).ToNot(HaveOccurred())
	Expect(string(raw)).ToNot(ContainSubstring(canary), "the encoded reply")
	var rec jsstore.Record
	Eventually(func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		rec, err = jsstore.Get(ctx, lf.js, protocol.HistorySubject(id, "db-1"))
		return err
	}).WithTimeout(10 * time.Second).Should(Succeed())
	Expect(string(rec.Data)).ToNot(ContainSubstring(canary), "the history record")
	Expect(auditOf(lf.state, id)).ToNot(BeEmpty())
	audit, err := os.ReadFile(filepath.Join(lf.state, agent.AuditFileName))
	Expect(err).ToNot(HaveOccurred())
	Expect(string(audit)).ToNot(ContainSubstring(canary), "the audit log")
	Expect(lf.log.String()).To(ContainSubstring(logged), "the log has a line about the resource")
	Expect(lf.log.String()).ToNot(ContainSubstring(canary), "the agent's log")
}

// canaryScript writes an executable script printing canary to stderr and
// exiting with code.
func canaryScript(dir, canary string, code int) string {
	path := filepath.Join(dir, fmt.Sprintf("print-%d.sh", code))
	Expect(os.WriteFile(path, []byte(fmt.Sprintf("#!/bin/sh\necho 'token %s' >&2\nexit %d\n", canary, code)), 0o755)).To(Succeed())
	return path
}

var _ = Describe("Redaction of sensitive resources on a running agent", func() {
	var lf *leakFixture
	BeforeEach(func() { lf = startLeakAgent() })

	It("keeps a failing sensitive exec's stderr out of the reply, history, audit and log, keeping the message's shape", func() {
		canary := "CANARY-exec-stderr-91c2"
		script := canaryScript(lf.dir, canary, 3)
		req := ensureRequest("redact-exec-1", time.Minute, "exec", map[string]any{"name": script, "sensitive": true, "logoutput": true})
		reply := lf.send(protocol.RequestNodeSubject("db-1"), req)
		Expect(reply.Error).To(BeNil())
		Expect(reply.Events).To(HaveLen(1))
		ev := reply.Events[0]
		Expect(ev.Failed).To(BeTrue())
		Expect(ev.Errors).To(Equal([]string{"exec " + script + ": desired state not achieved: exit code 3 is not one of [0]: [redacted]"}))
		lf.expectNoCanary(req.ID, reply, canary, `"msg":"failed","request":"`+req.ID+`","resource":"exec#`+script)
	})

	It("keeps a sensitive resource's failing health check output out of every record, keeping its status", func() {
		canary := "CANARY-health-output-5d07"
		script := canaryScript(lf.dir, canary, 2)
		target := filepath.Join(lf.dir, "app.conf")
		req := ensureRequest("redact-health-1", time.Minute, "file", map[string]any{
			"name": target, "ensure": "present", "content": "x\n", "owner": "root", "group": "root", "mode": "0600", "sensitive": true,
			"health_checks": []any{map[string]any{"name": "app", "command": script}},
		})
		reply := lf.send(protocol.RequestNodeSubject("db-1"), req)
		Expect(reply.Error).To(BeNil())
		Expect(reply.Events).To(HaveLen(1))
		ev := reply.Events[0]
		Expect(ev.Failed).To(BeTrue())
		Expect(ev.HealthChecks).To(HaveLen(1))
		Expect(ev.HealthChecks[0].Status).To(Equal(protocol.HealthCritical))
		Expect(ev.HealthChecks[0].Message).To(Equal("[redacted]"))
		Expect(ev.Errors).To(ContainElement("health check app: CRITICAL: [redacted]"))
		lf.expectNoCanary(req.ID, reply, canary, `"msg":"health check","request":"`+req.ID+`","resource":"file#`+target+`","check":"app","status":"CRITICAL"`)
	})

	It("replaces a templated owner read from sensitive data in properties and errors", func() {
		canary := "canary-owner-e4a9"
		target := filepath.Join(lf.dir, "db.conf")
		doc := fmt.Sprintf(`data:
  db:
    password: %s
sensitive_data: [db.password]
ccm:
  resources:
    - file:
        - %s:
            ensure: present
            content: "x\n"
            owner: "{{ lookup('data.db.password') }}"
            group: root
            mode: "0600"
`, canary, target)
		req := manifestRequest("redact-owner-1", false, bundleOf(doc, nil))
		reply := lf.send(protocol.RequestNodeSubject("db-1"), req)
		Expect(reply.Error).To(BeNil())
		Expect(reply.Events).To(HaveLen(1))
		ev := reply.Events[0]
		Expect(ev.Failed).To(BeTrue())
		var props map[string]any
		Expect(json.Unmarshal(ev.Properties.(json.RawMessage), &props)).To(Succeed())
		Expect(props).To(HaveKeyWithValue("owner", "[redacted]"))
		Expect(strings.Join(ev.Errors, "\n")).To(ContainSubstring(`could not lookup user "[redacted]": unknown user [redacted]`))
		lf.expectNoCanary(req.ID, reply, canary, `"msg":"failed","request":"`+req.ID+`","resource":"file#`+target)
		Expect(target).ToNot(BeAnExistingFile())
	})

	// A run of health checks only (an apply child with health_check_only)
	// of a sensitive resource has an event without properties; redacting
	// it panicked ("assignment to entry in nil map") and killed the agent.
	It("answers a health-check-only run of a sensitive resource and keeps serving", func() {
		canary := "CANARY-monitor-only-3c1d"
		target := filepath.Join(lf.dir, "watched.conf")
		Expect(os.WriteFile(target, []byte(canary+"\n"), 0o600)).To(Succeed())
		child := fmt.Sprintf(`ccm:
  resources:
    - file:
        - %s:
            ensure: present
            content: "%s\n"
            owner: root
            group: root
            mode: "0600"
            sensitive: true
            health_checks:
              - command: /bin/true
`, target, canary)
		doc := `ccm:
  resources:
    - apply:
        - child.yaml:
            health_check_only: true
`
		req := manifestRequest("redact-monitor-1", false, bundleOf(doc, map[string]string{"child.yaml": child}))
		reply := lf.send(protocol.RequestNodeSubject("db-1"), req)
		Expect(reply.Error).To(BeNil())
		Expect(reply.Events).To(HaveLen(2))
		Expect(reply.Events[0].ResourceID()).To(Equal("file#" + target))
		Expect(reply.Events[0].HealthChecks).To(HaveLen(1))
		Expect(reply.Events[0].HealthChecks[0].Status).To(Equal(protocol.HealthOK))
		lf.expectNoCanary(req.ID, reply, canary, `"request":"`+req.ID+`"`)

		again := lf.send(protocol.RequestNodeSubject("db-1"), ensureRequest("redact-monitor-2", time.Minute, "exec", map[string]any{"name": "/bin/true"}))
		Expect(again.Error).To(BeNil(), "the agent still serves")
		Expect(again.Events).To(HaveLen(1))
	})

	// Issue 39, finding 10: providers logged through a logger of their
	// own, so their debug lines ("running command" with its cwd, "stored
	// file" ...) skipped the redaction step every other record passes.
	It("redacts the providers' own debug lines: a working directory read from sensitive data stays out of the log", func() {
		canary := "canary-cwd-7b1e"
		cwd := filepath.Join(lf.dir, canary)
		Expect(os.Mkdir(cwd, 0o755)).To(Succeed())
		doc := fmt.Sprintf(`data:
  app:
    dir: %s
sensitive_data: [app.dir]
ccm:
  resources:
    - exec:
        - /bin/true:
            cwd: "{{ lookup('data.app.dir') }}"
`, cwd)
		req := manifestRequest("redact-provider-log-1", false, bundleOf(doc, nil))
		reply := lf.send(protocol.RequestNodeSubject("db-1"), req)
		Expect(reply.Error).To(BeNil())
		Expect(reply.Events).To(HaveLen(1))
		Expect(reply.Events[0].Failed).To(BeFalse(), "%v", reply.Events[0].Errors)
		lf.expectNoCanary(req.ID, reply, canary, `"msg":"running command","request":"`+req.ID+`","resource":"exec#/bin/true"`)
		Expect(lf.log.String()).To(ContainSubstring(`"cwd":"[redacted]"`), "the provider's line is there, redacted")
	})

	It("keeps the status of a sensitive resource that converged, its content left out", func() {
		target := filepath.Join(lf.dir, "ok.conf")
		req := ensureRequest("redact-ok-1", time.Minute, "file", map[string]any{
			"name": target, "ensure": "present", "content": "CANARY-content-0c3\n", "owner": "root", "group": "root", "mode": "0600", "sensitive": true,
		})
		reply := lf.send(protocol.RequestNodeSubject("db-1"), req)
		Expect(reply.Error).To(BeNil())
		Expect(reply.Events).To(HaveLen(1))
		ev := reply.Events[0]
		Expect(ev.Failed).To(BeFalse(), "%v", ev.Errors)
		Expect(ev.Status).ToNot(BeNil())
		st, ok := ev.Status.(*protocol.FileState)
		Expect(ok).To(BeTrue())
		Expect(st.Metadata.Owner).To(Equal("root"), "an owner written as it is stays visible")
		Expect(st.Metadata.Checksum).ToNot(BeEmpty())
		Expect(ev.FinalEnsure).To(Equal("present"))
		lf.expectNoCanary(req.ID, reply, "CANARY-content-0c3", `"msg":"changed","request":"`+req.ID+`","resource":"file#`+target)
	})
})
