package agent_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/agent"
	"github.com/ccm-fleet/ccm/broker/brokertest"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/providers"
	"github.com/ccm-fleet/ccm/resources/engine"
)

var _ = Describe("Agent security", func() {
	facts := map[string]any{"os": "debian"}

	It("does not execute when the audit line cannot be written", func() {
		f := startAgent(agent.Config{Identity: "web-1", AuditLog: "/dev/full"}, facts)
		canary := filepath.Join(GinkgoT().TempDir(), "canary")
		r := f.send(protocol.RequestNodeSubject("web-1"), ensureRequest("auditfail", time.Minute, "exec", map[string]any{"name": "/bin/touch " + canary}))
		Expect(r.Error).ToNot(BeNil())
		Expect(r.Error.Code).To(Equal(protocol.CodeInternal))
		Expect(r.Error.Message).To(Equal("audit log unavailable"))
		Expect(canary).ToNot(BeAnExistingFile())
	})

	It("refuses everything without a policy unless insecure", func() {
		f := startAgentAs(agent.Config{Identity: "web-1"}, facts)
		Expect(f.agent.Insecure()).To(BeFalse())
		canary := filepath.Join(GinkgoT().TempDir(), "canary")
		r := f.send(protocol.RequestNodeSubject("web-1"), ensureRequest("nopolicy", time.Minute, "exec", map[string]any{"name": "/bin/touch " + canary}))
		Expect(r.Error.Code).To(Equal(protocol.CodeUnauthenticated))
		Expect(canary).ToNot(BeAnExistingFile())
	})

	It("makes its key at first start (0600) and keeps it; replies are signed with it", func() {
		f := startAgent(agent.Config{Identity: "web-1"}, facts)
		Expect(f.agent.PublicKey()).To(HavePrefix("U"))
		sub, err := f.nc.SubscribeSync(f.nc.NewInbox())
		Expect(err).ToNot(HaveOccurred())
		req := ensureRequest("signedreply", time.Minute, "file", map[string]any{"name": filepath.Join(GinkgoT().TempDir(), "x"), "owner": "root", "group": "root", "mode": "0644"})
		req.Noop = true
		b, err := json.Marshal(req)
		Expect(err).ToNot(HaveOccurred())
		Expect(f.nc.PublishRequest(protocol.RequestNodeSubject("web-1"), sub.Subject, b)).To(Succeed())
		m, err := sub.NextMsg(10 * time.Second)
		Expect(err).ToNot(HaveOccurred())
		Expect(m.Header.Get(protocol.HeaderSigner)).To(Equal(f.agent.PublicKey()))
		Expect(protocol.Verify(m.Data, m.Header.Get(protocol.HeaderSigner), m.Header.Get(protocol.HeaderSignature))).To(Succeed())
	})

	It("refuses a key file with wider permissions or that is not a user seed", func() {
		b := brokertest.Start(GinkgoT())
		nc, err := nats.Connect(b.ClientURL())
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(nc.Close)
		reg, err := providers.Builtin(providers.Options{})
		Expect(err).ToNot(HaveOccurred())
		dir := GinkgoT().TempDir()
		path := filepath.Join(dir, agent.KeyFileName)
		Expect(os.WriteFile(path, []byte("SUAxxx"), 0o644)).To(Succeed())
		_, err = agent.New(agent.Config{Identity: "web-1", StateDir: dir, Insecure: true}, nc, engine.New(reg), nil)
		Expect(err).To(MatchError(agent.ErrKey))
		Expect(err).To(MatchError(ContainSubstring("wider than 0600")))
		Expect(os.Chmod(path, 0o600)).To(Succeed())
		_, err = agent.New(agent.Config{Identity: "web-1", StateDir: dir, Insecure: true}, nc, engine.New(reg), nil)
		Expect(err).To(MatchError(ContainSubstring("not an nkeys seed")))
	})
})
