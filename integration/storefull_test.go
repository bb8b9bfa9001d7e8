package integration_test

import (
	"context"
	"regexp"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/broker"
	"github.com/ccm-fleet/ccm/broker/brokertest"
	"github.com/ccm-fleet/ccm/jsstore"
)

// fillStore publishes junk into the history stream until the broker
// refuses it for want of store space.
func fillStore(js jetstream.JetStream) {
	GinkgoHelper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	chunk := []byte(strings.Repeat("x", 8<<10))
	var err error
	for range 1000 {
		if _, err = js.Publish(ctx, "ccm.v1.history.junk.filler", chunk); err != nil {
			break
		}
	}
	Expect(err).To(MatchError(ContainSubstring("insufficient resources")), "the store is full")
}

var _ = Describe("A broker whose JetStream store is full", Ordered, func() {
	var (
		f  *fleet
		js jetstream.JetStream
	)

	BeforeAll(func() {
		b := brokertest.StartConfig(GinkgoT(), broker.Config{MaxStore: 256 << 10})
		nc, err := nats.Connect(b.ClientURL())
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(nc.Close)
		js, err = jetstream.New(nc)
		Expect(err).ToNot(HaveOccurred())
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, err = jsstore.EnsureHistory(ctx, js, jsstore.HistoryConfig{})
		Expect(err).ToNot(HaveOccurred())
		_, err = jsstore.EnsureRegistry(ctx, js, jsstore.RegistryConfig{TTL: time.Second})
		Expect(err).ToNot(HaveOccurred())
		fillStore(js)

		cfg := historyAgentConfig
		cfg.Heartbeat, cfg.RegistryTTL = 200*time.Millisecond, time.Second
		f = startFleetWith(fleetOptions{servers: []string{b.ClientURL()}, config: cfg}, 4, "full", map[string]any{"dc": "ams"}, "os=debian,rhel")
		// Every agent is up and answers a broadcast, yet none is in the registry.
		Consistently(func() []string { return registryIdentities(f.url) }).WithTimeout(2 * time.Second).Should(BeEmpty())
	})

	It("discover finds the agents by a broadcast and says why on stderr", func() {
		code, out, errOut := f.orch("discover", "--where", "os=debian")
		Expect(code).To(Equal(0), errOut)
		Expect(out).To(ContainSubstring("full-0001"))
		Expect(out).To(ContainSubstring("full-0003"))
		Expect(out).To(ContainSubstring("2 hosts"))
		Expect(errOut).To(ContainSubstring("ccm-orch: discovery: the node registry is empty; discovered by broadcast instead: 2 hosts"))
	})

	var requestID string

	It("ensure --where runs on them, and says on stderr and in the summary that history did not keep the request", func() {
		code, out, errOut := f.orch("ensure", "exec", "/bin/true", "--where", "os=rhel")
		Expect(code).To(Equal(0), errOut)
		Expect(errOut).To(ContainSubstring("ccm-orch: discovery: the node registry is empty; discovered by broadcast instead: 2 hosts"))
		Expect(errOut).To(MatchRegexp(`ccm-orch: history: the record of request [a-z0-9]{20} was not kept: .*insufficient resources.*\(history show will not find it\)`))
		l := outLines(out)
		Expect(l[len(l)-1]).To(MatchRegexp(`^2 expected, 2 replied: 0 ok, 2 changed, 0 failed, 0 no reply; history: request record not kept: .*insufficient resources.* \(request [a-z0-9]{20}, .*\)$`))
		requestID = regexp.MustCompile(`\(request ([a-z0-9]{20}),`).FindStringSubmatch(l[len(l)-1])[1]

		code, doc := f.orchJSON("ensure", "exec", "/bin/true", "--where", "os=rhel")
		Expect(code).To(Equal(0))
		Expect(doc).To(HaveKeyWithValue("discovery", "broadcast"))
		Expect(doc).To(HaveKeyWithValue("discovery_fallback", "the node registry is empty"))
		Expect(doc).To(HaveKeyWithValue("history_error", ContainSubstring("insufficient resources")))
	})

	It("history show explains the missing request record and lists the host records once they land", func() {
		code, out, errOut := f.orch("history", "show", requestID)
		Expect(code).To(Equal(1))
		Expect(errOut).To(ContainSubstring("request " + requestID + " is unknown: history holds no request record and no host records for it"))
		Expect(errOut).To(ContainSubstring("a request that ran while the store was full or history was unavailable is not among them"))
		Expect(out).To(BeEmpty())

		// Space comes back: the agents send their spooled replies, the request's own record stays lost.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		s, err := js.Stream(ctx, "CCM_HISTORY")
		Expect(err).ToNot(HaveOccurred())
		Expect(s.Purge(ctx, jetstream.WithPurgeSubject("ccm.v1.history.junk.filler"))).To(Succeed())
		Eventually(func() string {
			_, _, errOut := f.orch("history", "show", requestID)
			return errOut
		}).WithTimeout(30 * time.Second).WithPolling(500 * time.Millisecond).Should(ContainSubstring("; 2 host records found"))
		code, out, errOut = f.orch("history", "show", requestID)
		Expect(code).To(Equal(1))
		Expect(outLines(out)).To(HaveLen(3), errOut)
		Expect(out).To(MatchRegexp(`(?m)^full-0002\s+changed\s+`))
		Expect(out).To(MatchRegexp(`(?m)^full-0004\s+changed\s+`))
	})
})

// outLines splits output into its non-empty lines.
func outLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}
