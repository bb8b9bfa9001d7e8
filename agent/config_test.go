package agent_test

import (
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/agent"
)

var _ = Describe("Config", func() {
	It("loads the example configuration shipped in dist/", func() {
		c, err := agent.LoadConfig(filepath.Join("..", "dist", "agent.yaml"))
		Expect(err).ToNot(HaveOccurred())
		Expect(c.Facts).To(HaveKeyWithValue("role", "web"))
		Expect(c.Policy).To(Equal("/etc/ccm/policy.yaml"))
		c = c.WithDefaults()
		c.Identity = "web17.example.net"
		Expect(c.Validate()).To(Succeed())
		Expect(c.SubjectFacts).To(Equal([]string{"os", "platform", "role"}))
		Expect(c.MaxConcurrent).To(Equal(agent.DefaultMaxConcurrent))
		Expect(c.Heartbeat).To(Equal(agent.DefaultHeartbeat))
		Expect(c.RegistryTTL).To(Equal(3 * agent.DefaultHeartbeat))
		Expect(c.SpoolMaxRecords).To(Equal(agent.DefaultSpoolMaxRecords))
	})

	DescribeTable("refuses bad configuration",
		func(yaml, problem string) {
			p := filepath.Join(GinkgoT().TempDir(), "agent.yaml")
			Expect(os.WriteFile(p, []byte(yaml), 0o600)).To(Succeed())
			c, err := agent.LoadConfig(p)
			if err == nil {
				err = c.WithDefaults().Validate()
			}
			Expect(err).To(MatchError(agent.ErrConfig))
			Expect(err.Error()).To(ContainSubstring(problem))
		},
		Entry("unknown key", "identiti: x\n", "identiti"),
		Entry("bad identity", "identity: 'web 1'\n", "identity"),
		Entry("too much concurrency", "identity: a\nmax_concurrent: 5000\n", "max_concurrent"),
		Entry("wrong type, named by key", "identity: a\nqueue_length: lots\n", "queue_length: expected a whole number, got string"),
		Entry("a heartbeat too short", "identity: a\nheartbeat: 10ms\n", "heartbeat 10ms must be between 100ms and 1h0m0s"),
		Entry("a registry ttl under two heartbeats", "identity: a\nheartbeat: 10s\nregistry_ttl: 15s\n", "registry_ttl 15s must be at least 1s and at least two heartbeats (20s)"),
		Entry("a spool too large", "identity: a\nspool_max_bytes: 2000000000\n", "spool_max_bytes"),
	)
})
