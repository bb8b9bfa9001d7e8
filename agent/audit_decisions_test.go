package agent_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/agent"
	"github.com/ccm-fleet/ccm/protocol"
)

// publishSigned signs req with k and sends it to identity's node subject
// without waiting for the reply.
func (f *fixture) publishSigned(identity string, k scopeKey, req *protocol.FleetRequest) {
	GinkgoHelper()
	req.Sender, req.Reply = k.pub, f.nc.NewInbox()
	body, err := json.Marshal(req)
	Expect(err).ToNot(HaveOccurred())
	signer, sig, err := protocol.Sign(body, k.kp)
	Expect(err).ToNot(HaveOccurred())
	h := nats.Header{}
	h.Set(protocol.HeaderSigner, signer)
	h.Set(protocol.HeaderSignature, sig)
	Expect(f.nc.PublishMsg(&nats.Msg{Subject: protocol.RequestNodeSubject(identity), Reply: req.Reply, Header: h, Data: body})).To(Succeed())
}

var _ = Describe("Audit decisions", func() {
	var (
		dir, policy string
		runner      scopeKey
	)
	BeforeEach(func() {
		dir = GinkgoT().TempDir()
		runner = newScopeKey()
		policy = filepath.Join(dir, "policy.yaml")
		Expect(os.WriteFile(policy, []byte(strings.NewReplacer("RUNNER", runner.pub).Replace(`
signers:
  - name: runner
    public_key: RUNNER
    allow: [exec]
    exec:
      commands: ["/usr/bin/touch *", "/bin/sleep *"]
`)), 0o644)).To(Succeed())
	})

	It("says forbidden, with its rule, for a scope refusal made as the resource was about to run", func() {
		state := filepath.Join(dir, "state")
		f := startAgentAs(agent.Config{Identity: "web-1", Policy: policy, StateDir: state}, map[string]any{"os": "debian"})
		canary := filepath.Join(dir, "canary-templated")
		// The command is a template: admission sees the type only, the
		// engine's guard refuses the command it expands to.
		req := ensureRequest("audit-scope-1", time.Minute, "exec", map[string]any{"name": fmt.Sprintf("{{ '/bin/sh' }} -c 'touch %s'", canary)})
		reply := f.sendSigned("web-1", runner, req)
		Expect(reply.Error).ToNot(BeNil())
		Expect(reply.Error.Code).To(Equal(protocol.CodeForbidden))
		Expect(canary).ToNot(BeAnExistingFile())
		lines := auditOf(state, req.ID)
		Expect(lines).ToNot(BeEmpty())
		last := lines[len(lines)-1]
		Expect(last.Result).ToNot(BeNil(), "the line with the result")
		Expect(last.Result.Error.Code).To(Equal(protocol.CodeForbidden))
		Expect(last.Decision).To(Equal("forbidden"))
		Expect(last.Rule).To(ContainSubstring("exec.commands"))
		Expect(last.Value).To(ContainSubstring("/bin/sh"))
		Expect(last.Message).To(Equal(reply.Error.Message))
		for _, l := range lines {
			if l.Result != nil && l.Result.Error != nil && l.Result.Error.Code == protocol.CodeForbidden {
				Expect(l.Decision).To(Equal("forbidden"), "no line says accepted over a forbidden result")
			}
		}
	})

	It("writes the interrupted line of a request the agent stopped on with its subject, signer and resources", func() {
		state := filepath.Join(dir, "state")
		f := startAgentAs(agent.Config{Identity: "web-1", Policy: policy, StateDir: state}, map[string]any{"os": "debian"})
		req := ensureRequest("audit-interrupted-1", time.Minute, "exec", map[string]any{"name": "/bin/sleep 5"})
		f.publishSigned("web-1", runner, req)
		var accepted agent.AuditRecord
		Eventually(func() []agent.AuditRecord { return auditOf(state, req.ID) }).WithTimeout(10 * time.Second).Should(ContainElement(
			HaveField("Decision", agent.DecisionAccepted), &accepted))
		// The journal as a crash leaves it: the request received, never
		// answered. A new agent starts on a copy of it.
		journal, err := os.ReadFile(filepath.Join(state, agent.ReplayFileName))
		Expect(err).ToNot(HaveOccurred())
		Expect(f.stop()).To(Succeed())
		crashed := filepath.Join(dir, "crashed")
		Expect(os.MkdirAll(crashed, 0o700)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(crashed, agent.ReplayFileName), journal, 0o600)).To(Succeed())

		startAgentAs(agent.Config{Identity: "web-1", Policy: policy, StateDir: crashed}, map[string]any{"os": "debian"})
		var lines []agent.AuditRecord
		Eventually(func() []agent.AuditRecord { lines = auditOf(crashed, req.ID); return lines }).WithTimeout(10 * time.Second).ShouldNot(BeEmpty())
		Expect(lines).To(HaveLen(1))
		l := lines[0]
		Expect(l.Decision).To(Equal(string(protocol.CodeInterrupted)))
		Expect(l.Subject).To(Equal(protocol.RequestNodeSubject("web-1")))
		Expect(l.Subject).To(Equal(accepted.Subject))
		Expect(l.Signer).To(Equal(agent.AuditSigner{Name: "runner", Key: runner.pub}))
		Expect(l.Resources).To(Equal([]string{"exec#/bin/sleep 5"}))
		Expect(l.Resources).To(Equal(accepted.Resources))
	})
})
