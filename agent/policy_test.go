package agent_test

import (
	"os"
	"path/filepath"

	"github.com/nats-io/nats.go"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/agent"
	"github.com/ccm-fleet/ccm/broker/brokertest"
	"github.com/ccm-fleet/ccm/providers"
	"github.com/ccm-fleet/ccm/resources/engine"
)

var _ = Describe("Policy", func() {
	It("makes New fail on a broken policy file: nothing is allowed by it", func() {
		path := filepath.Join(GinkgoT().TempDir(), "policy.yaml")
		Expect(os.WriteFile(path, []byte("signers: [{name: ops, public_key: nope, allow: [file]}]\n"), 0o600)).To(Succeed())
		b := brokertest.Start(GinkgoT())
		nc, err := nats.Connect(b.ClientURL())
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(nc.Close)
		reg, err := providers.Builtin(providers.Options{})
		Expect(err).ToNot(HaveOccurred())
		_, err = agent.New(agent.Config{Identity: "web-1", Policy: path, StateDir: GinkgoT().TempDir()}, nc, engine.New(reg), nil)
		Expect(err).To(MatchError(agent.ErrPolicy))
		Expect(err).To(MatchError(ContainSubstring("signers[0] ops: public_key")))
	})
})
