package continuous_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/continuous"
	"github.com/ccm-fleet/ccm/sources"
)

// ccmExample is the configuration example of CCM's agent documentation,
// key for key.
const ccmExample = `
# CCM Agent Configuration Example
interval: 5m
health_check_interval: 1m
manifests:
  - /etc/choria/ccm/manifests/base.yaml
  - obj://ccm-manifests/app.tar.gz
  - https://config.example.com/manifests/web.tar.gz
log_level: info
nats_context: CCM
external_data_url: kv://ccm-data/common
cache_dir: /etc/choria/ccm/source
monitor_port: 9100
# registration: jetstream
`

var _ = Describe("Config", func() {
	It("accepts CCM's documented example unchanged", func() {
		c, err := continuous.ParseConfig([]byte(ccmExample))
		Expect(err).NotTo(HaveOccurred())
		Expect(c.IntervalDuration()).To(Equal(5 * time.Minute))
		Expect(c.HealthCheckDuration()).To(Equal(time.Minute))
		Expect(c.MonitorPort).To(Equal(9100))
		Expect(c.Sources()).To(HaveLen(3))
		Expect(c.Sources()[1].Kind).To(Equal(sources.KindObject))
		Expect(c.Sources()[2].Kind).To(Equal(sources.KindHTTP))
	})

	It("fills CCM's defaults", func() {
		c, err := continuous.ParseConfig([]byte("manifests: [/srv/m.yaml]\n"))
		Expect(err).NotTo(HaveOccurred())
		Expect(c.IntervalDuration()).To(Equal(continuous.DefaultInterval))
		Expect(c.HealthCheckDuration()).To(BeZero())
		Expect(c.CacheDir).To(Equal("/etc/choria/ccm/source"))
		Expect(c.NATSContext).To(Equal("CCM"))
		Expect(c.LogLevel).To(Equal("info"))
		Expect(c.MonitorPort).To(BeZero())
	})

	It("takes external_data_url as a plain absolute path, as CCM writes it, and as file:// (issue 41 item 2)", func() {
		for _, u := range []string{"/etc/ccm/data.yaml", "file:///etc/ccm/data.yaml"} {
			c, err := continuous.ParseConfig([]byte("external_data_url: " + u + "\n"))
			Expect(err).NotTo(HaveOccurred(), u)
			d, err := continuous.ParseDataURL(c.ExternalDataURL)
			Expect(err).NotTo(HaveOccurred())
			Expect(d.Scheme).To(Equal("file"))
			Expect(d.Path).To(Equal("/etc/ccm/data.yaml"))
		}
	})

	It("takes CCM's day durations", func() {
		c, err := continuous.ParseConfig([]byte("interval: 1d\n"))
		Expect(err).NotTo(HaveOccurred())
		Expect(c.IntervalDuration()).To(Equal(24 * time.Hour))
	})

	DescribeTable("refuses",
		func(doc, msg string) {
			_, err := continuous.ParseConfig([]byte(doc))
			Expect(err).To(MatchError(continuous.ErrConfig))
			Expect(err.Error()).To(ContainSubstring(msg))
		},
		Entry("an interval under 30s", "interval: 29s\n", "interval 29s must be at least 30s"),
		Entry("an interval that does not parse", "interval: soon\n", "interval"),
		Entry("a health check interval under 1s", "health_check_interval: 100ms\n", "health_check_interval"),
		Entry("an unknown key", "intervall: 5m\n", "intervall"),
		Entry("a bad log level", "log_level: loud\n", "log_level"),
		Entry("a bad registration destination", "registration: kafka\n", "registration"),
		Entry("a port out of range", "monitor_port: 70000\n", "monitor_port"),
		Entry("a relative manifest", "manifests: [base.yaml]\n", "manifests[0]"),
		Entry("the same manifest twice", "manifests: [/a.yaml, /a.yaml]\n", "is also manifests[0]"),
		Entry("a bad data URL", "external_data_url: ftp://x/y\n", "external_data_url"),
		Entry("a relative data path", "external_data_url: data.yaml\n", `external_data_url: invalid data location: "data.yaml": a path must be absolute`),
		Entry("a data URL with another fragment", "external_data_url: https://x/d.yaml#md5=00\n", "the only fragment taken is #sha256="),
	)
})
