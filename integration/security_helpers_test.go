package integration_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/agent"
	"github.com/ccm-fleet/ccm/broker"
	"github.com/ccm-fleet/ccm/internal/proctest"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/providers"
	"github.com/ccm-fleet/ccm/providers/runner"
	"github.com/ccm-fleet/ccm/resources/engine"
)

// signingKey is a user key pair made in the test, with its seed file.
type signingKey struct {
	kp       nkeys.KeyPair
	pub      string
	seedFile string
}

func newSigningKey(dir, name string) signingKey {
	kp, err := nkeys.CreateUser()
	Expect(err).ToNot(HaveOccurred())
	pub, err := kp.PublicKey()
	Expect(err).ToNot(HaveOccurred())
	seed, err := kp.Seed()
	Expect(err).ToNot(HaveOccurred())
	path := filepath.Join(dir, name+".seed")
	Expect(os.WriteFile(path, seed, 0o600)).To(Succeed())
	return signingKey{kp: kp, pub: pub, seedFile: path}
}

// securedAgent is one agent with a policy, run in this process, that can
// be stopped and started again on the same state directory. Whoever starts
// it first registers the cleanup that stops it (see stopLast).
type securedAgent struct {
	b        *broker.Broker
	identity string
	stateDir string
	policy   string
	agent    *agent.Agent
	stop     func()
}

// stopLast stops the agent as it is when called (it may have been
// restarted since it was first started).
func (s *securedAgent) stopLast() {
	if s.stop != nil {
		s.stop()
	}
}

func (s *securedAgent) start() {
	nc, err := nats.Connect(s.b.ClientURL())
	Expect(err).ToNot(HaveOccurred())
	reg, err := providers.Builtin(providers.Options{})
	Expect(err).ToNot(HaveOccurred())
	ready := make(chan struct{})
	a, err := agent.New(agent.Config{Identity: s.identity, StateDir: s.stateDir, Policy: s.policy, ShutdownTimeout: 10 * time.Second},
		nc, engine.New(reg, engine.WithHealthRunner(providers.HealthRunner(runner.Exec{}))), map[string]any{"os": "debian", "role": "web"}, agent.WithReady(func() { close(ready) }))
	Expect(err).ToNot(HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	stopped := false
	s.agent = a
	s.stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		Eventually(done).WithTimeout(20 * time.Second).Should(Receive(BeNil()))
		nc.Close()
	}
	Eventually(ready).WithTimeout(10 * time.Second).Should(BeClosed())
}

// auditLines returns the audit log's records.
func (s *securedAgent) auditLines() []agent.AuditRecord {
	data, err := os.ReadFile(filepath.Join(s.stateDir, agent.AuditFileName))
	Expect(err).ToNot(HaveOccurred())
	var out []agent.AuditRecord
	for _, line := range proctest.CompleteLines(data) {
		var r agent.AuditRecord
		Expect(json.Unmarshal([]byte(line), &r)).To(Succeed(), line)
		out = append(out, r)
	}
	return out
}

// auditOf returns the audit records of request id.
func (s *securedAgent) auditOf(id string) []agent.AuditRecord {
	var out []agent.AuditRecord
	for _, r := range s.auditLines() {
		if r.RequestID == id {
			out = append(out, r)
		}
	}
	return out
}

// canaryRequest is an exec that would create file, targeted at identity.
func canaryRequest(id, file string, created time.Time, ttl time.Duration, extra map[string]any) *protocol.FleetRequest {
	props := map[string]any{"name": "/bin/touch " + file}
	for k, v := range extra {
		props[k] = v
	}
	er, err := protocol.NewEnsureRequest(protocol.TypeExec, props)
	Expect(err).ToNot(HaveOccurred())
	req := protocol.NewFleetRequest(id, created, ttl)
	req.Ensure = er
	return req
}

// wire is one request as it goes out: body, headers, reply subject.
type wire struct {
	body   []byte
	header nats.Header
	reply  string
}

// signedWire encodes req bound to reply, signed by key (nil: unsigned).
func signedWire(req *protocol.FleetRequest, reply string, key *signingKey) wire {
	req.Reply = reply
	if key != nil {
		req.Sender = key.pub
	}
	body, err := json.Marshal(req)
	Expect(err).ToNot(HaveOccurred())
	w := wire{body: body, reply: reply, header: nats.Header{}}
	if key != nil {
		signer, sig, err := protocol.Sign(body, key.kp)
		Expect(err).ToNot(HaveOccurred())
		w.header.Set(protocol.HeaderSigner, signer)
		w.header.Set(protocol.HeaderSignature, sig)
	}
	return w
}

// exchange sends w on subject with its reply subject and returns the
// first reply, nil when none arrived within wait.
func exchange(nc *nats.Conn, subject string, w wire, wait time.Duration) *protocol.FleetReply {
	sub, err := nc.SubscribeSync(w.reply)
	Expect(err).ToNot(HaveOccurred())
	defer func() { _ = sub.Unsubscribe() }()
	Expect(nc.PublishMsg(&nats.Msg{Subject: subject, Reply: w.reply, Header: w.header, Data: w.body})).To(Succeed())
	m, err := sub.NextMsg(wait)
	if err != nil {
		GinkgoWriter.Printf("no reply on %s: %v\n", w.reply, err)
		return nil
	}
	r, err := protocol.DecodeFleetReply(m.Data, protocol.Limits{})
	Expect(err).ToNot(HaveOccurred())
	return r
}

// policyFile writes a policy and returns its path.
func policyFile(dir string, signers ...string) string {
	path := filepath.Join(dir, "policy.yaml")
	doc := "max_clock_skew: 30s\nsigners:\n" + strings.Join(signers, "")
	Expect(os.WriteFile(path, []byte(doc), 0o644)).To(Succeed())
	return path
}

func signerEntry(name, pub, allow string, more ...string) string {
	s := fmt.Sprintf("  - name: %s\n    public_key: %s\n    allow: [%s]\n", name, pub, allow)
	for _, m := range more {
		s += "    " + m + "\n"
	}
	return s
}
