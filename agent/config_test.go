package agent_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/agent"
)

var _ = Describe("Config", func() {
	It("loads the example configuration shipped in dist/", func() {
		c, err := agent.LoadConfig(filepath.Join("..", "dist", "agent.yaml"))
		Expect(err).ToNot(HaveOccurred())
		Expect(c.Facts).To(BeEmpty(), "a fresh host announces only the facts it gathers: no role it does not have")
		Expect(c.FactsFile).To(BeEmpty())
		Expect(c.Site).To(BeEmpty(), "no site unless the operator names one")
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

	It("loads the example with every commented setting uncommented (nkey rather than creds)", func() {
		data, err := os.ReadFile(filepath.Join("..", "dist", "agent.yaml"))
		Expect(err).ToNot(HaveOccurred())
		setting := regexp.MustCompile(`^# ?( *[a-z_]+:| +- )`)
		var lines []string
		for _, l := range strings.Split(string(data), "\n") {
			if setting.MatchString(l) && !strings.Contains(l, "creds:") {
				l = strings.TrimPrefix(strings.TrimPrefix(l, "#"), " ")
			}
			lines = append(lines, l)
		}
		p := filepath.Join(GinkgoT().TempDir(), "agent.yaml")
		Expect(os.WriteFile(p, []byte(strings.Join(lines, "\n")), 0o600)).To(Succeed())
		c, err := agent.LoadConfig(p)
		Expect(err).ToNot(HaveOccurred())
		Expect(c.Servers).To(HaveLen(2))
		Expect(c.Facts).To(Equal(map[string]string{"role": "web"}), "the commented example")
		Expect(c.Context).To(Equal("fleet"))
		Expect(c.TLS.CA).To(Equal("/etc/ccm/ca.pem"))
		Expect(c.InboxPrefix).To(Equal("_INBOX.agent-web17"))
		Expect(c.Site).To(Equal("fra1"))
		Expect(c.MetricsListen).To(Equal("127.0.0.1:9100"))
		Expect(c.Log).To(Equal(agent.LogConfig{Format: "text", Level: "info"}))
		Expect(c.PackageLockTimeout).To(Equal(2 * time.Minute))
		c = c.WithDefaults()
		Expect(c.Validate()).To(Succeed())
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
		Entry("a diff limit over 16 MiB", "identity: a\ndiff_max_bytes: 20000000\n", "diff_max_bytes 20000000 is more than 16 MiB"),
		Entry("wrong type, named by key", "identity: a\nqueue_length: lots\n", "queue_length: expected a whole number, got string"),
		Entry("a heartbeat too short", "identity: a\nheartbeat: 10ms\n", "heartbeat 10ms must be between 100ms and 1h0m0s"),
		Entry("a registry ttl under two heartbeats", "identity: a\nheartbeat: 10s\nregistry_ttl: 15s\n", "registry_ttl 15s must be at least 1s and at least two heartbeats (20s)"),
		Entry("a negative package lock timeout", "identity: a\npackage_lock_timeout: -1s\n", "package_lock_timeout -1s must be between 0 (the default, 2m) and 1h0m0s"),
		Entry("a package lock timeout over an hour", "identity: a\npackage_lock_timeout: 2h\n", "package_lock_timeout 2h0m0s must be between"),
		Entry("a spool too large", "identity: a\nspool_max_bytes: 2000000000\n", "spool_max_bytes"),
		Entry("a site that is not one subject token", "site: fra.1\n", `site: bad_request: site name "fra.1": character at position 3 is not allowed`),
		Entry("a site that is not a string", "site: [fra1]\n", "site"),
		Entry("servers not a list", "servers: nats://a:4222\n", "servers"),
		Entry("a server that is no URL", "servers: [nats://a:4222, 'just words']\n", `servers[1] "just words": want one URL like nats://host:4222`),
		Entry("two servers in one entry", "servers: ['nats://a:4222,nats://b:4222']\n", "servers[0]"),
		Entry("creds and nkey together", "creds: /etc/ccm/a.creds\nnkey: /etc/ccm/a.nk\n", "creds and nkey are mutually exclusive"),
		Entry("an unknown tls key, named as written", "tls:\n  cert: /c.pem\n  Key: /k.pem\n", `tls: unknown key "Key"`),
		Entry("a tls cert without its key", "tls:\n  cert: /c.pem\n", "tls.cert and tls.key go together"),
		Entry("a tls key without its cert", "tls:\n  key: /k.pem\n", "tls.cert and tls.key go together"),
		Entry("an inbox prefix with a wildcard", "inbox_prefix: _INBOX.*\n", `inbox_prefix "_INBOX.*"`),
		Entry("an inbox prefix with an empty token", "inbox_prefix: _INBOX..a\n", "inbox_prefix"),
		Entry("metrics_listen without a port", "metrics_listen: 127.0.0.1\n", `metrics_listen "127.0.0.1"`),
		Entry("an unknown log format", "log:\n  format: xml\n", `log.format "xml": want text or json`),
		Entry("an unknown log level", "log:\n  level: verbose\n", `log.level "verbose": want debug, info, warn or error`),
		Entry("an unknown log key, named as written", "log:\n  colour: true\n", `log: unknown key "colour"`),
		Entry("a misspelt connection key", "server: nats://a:4222\n", `unknown key "server"`),
		Entry("a sources monitor_port (metrics are on metrics_listen)", "identity: a\nsources:\n  monitor_port: 9100\n  manifests: [/etc/ccm/site.yaml]\n", "sources.monitor_port"),
		Entry("a sources nats_context (one connection)", "identity: a\nsources:\n  nats_context: other\n", "sources.nats_context"),
		Entry("a sources interval under CCM's minimum", "identity: a\nsources:\n  interval: 10s\n", "sources: invalid"),
		Entry("a misspelt sources key", "identity: a\nsources:\n  manifest: [/etc/ccm/site.yaml]\n", `unknown key "manifest"`),
	)

	It("defaults the sources' cache_dir below the state directory", func() {
		p := filepath.Join(GinkgoT().TempDir(), "agent.yaml")
		Expect(os.WriteFile(p, []byte("identity: a\nstate_dir: /var/lib/x\nsources:\n  manifests: [/etc/ccm/site.yaml]\n"), 0o600)).To(Succeed())
		c, err := agent.LoadConfig(p)
		Expect(err).ToNot(HaveOccurred())
		Expect(c.WithDefaults().Validate()).To(Succeed())
		Expect(c.Sources.CacheDir).To(Equal("/var/lib/x/sources"))
		Expect(c.Sources.IntervalDuration()).To(Equal(5 * time.Minute))
	})

	It("takes every connection, metrics and log setting from the file", func() {
		p := filepath.Join(GinkgoT().TempDir(), "agent.yaml")
		Expect(os.WriteFile(p, []byte(`servers: [nats://n1:4222, tls://n2:4222]
context: fleet
nkey: /etc/ccm/agent.nk
tls: {cert: /etc/ccm/c.pem, key: /etc/ccm/k.pem, ca: /etc/ccm/ca.pem}
inbox_prefix: _INBOX.agent-web1
metrics_listen: 127.0.0.1:9100
log: {format: json, level: warn}
`), 0o600)).To(Succeed())
		c, err := agent.LoadConfig(p)
		Expect(err).ToNot(HaveOccurred())
		Expect(c.Servers).To(Equal([]string{"nats://n1:4222", "tls://n2:4222"}))
		Expect(c.Context).To(Equal("fleet"))
		Expect(c.NKey).To(Equal("/etc/ccm/agent.nk"))
		Expect(c.TLS).To(Equal(agent.TLSConfig{Cert: "/etc/ccm/c.pem", Key: "/etc/ccm/k.pem", CA: "/etc/ccm/ca.pem"}))
		Expect(c.InboxPrefix).To(Equal("_INBOX.agent-web1"))
		Expect(c.MetricsListen).To(Equal("127.0.0.1:9100"))
		Expect(c.Log).To(Equal(agent.LogConfig{Format: "json", Level: "warn"}))
		c = c.WithDefaults()
		c.Identity = "web1"
		Expect(c.Validate()).To(Succeed())
	})
})
