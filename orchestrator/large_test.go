package orchestrator_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/agent"
	"github.com/ccm-fleet/ccm/jsstore"
	"github.com/ccm-fleet/ccm/manifest"
	"github.com/ccm-fleet/ccm/orchestrator"
	"github.com/ccm-fleet/ccm/orchestrator/fleettest"
	"github.com/ccm-fleet/ccm/protocol"
)

// largeManifest is a manifest of count files below dir that are absent and
// stay absent (stable, one stat each), plus extra (YAML list items of the
// file type), so that its reply is larger than one message.
func largeManifest(dir string, count int, extra string) *manifest.Bundle {
	GinkgoHelper()
	var b strings.Builder
	b.WriteString("ccm:\n  resources:\n    - file:\n")
	for i := range count {
		fmt.Fprintf(&b, "        - %q: {ensure: absent}\n", filepath.Join(dir, fmt.Sprintf("p%d", i)))
	}
	b.WriteString(extra)
	return loadBundle(b.String(), nil)
}

var _ = Describe("Client.Run with a reply larger than one message", Ordered, func() {
	// largeCount resources give a reply of several messages of the
	// broker's default 1 MiB max payload (each event is about 800 bytes).
	const largeCount = 10000
	var (
		fl     *fleettest.Fleet
		nc     *nats.Conn
		client *orchestrator.Client
		ctx    context.Context
		dir    string
	)
	BeforeAll(func() {
		fl = fleettest.StartWith(GinkgoT(), fleettest.Options{History: true, Config: agent.Config{HistoryRetry: 100 * time.Millisecond}},
			1, map[string]any{"kernel": "Linux"})
		nc = fl.Connect(GinkgoT())
		client = orchestrator.New(nc, orchestrator.WithSender("tester@here"), orchestrator.WithLogger(slog.New(slog.NewTextHandler(GinkgoWriter, nil))))
		ctx = context.Background()
	})
	BeforeEach(func() { dir = GinkgoT().TempDir() })

	It("receives the reply whole, counts every resource, and history shows the same run with the one real change", func() {
		canary := "canary-large-" + fmt.Sprint(time.Now().UnixNano())
		target := filepath.Join(dir, "real-change")
		bundle := largeManifest(dir, largeCount, fmt.Sprintf("        - %q: {ensure: present, content: %q, owner: root, group: root, mode: \"0644\"}\n", target, canary))

		var parts int
		sub, err := nc.Subscribe("_INBOX.>", func(m *nats.Msg) {
			if m.Header.Get(protocol.HeaderParts) != "" {
				parts++
			}
		})
		Expect(err).NotTo(HaveOccurred())
		defer func() { _ = sub.Unsubscribe() }()

		res, err := client.Run(ctx, orchestrator.Request{Manifest: bundle, Timeout: 2 * time.Minute})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.NoReply).To(BeEmpty())
		Expect(res.Incomplete).To(BeEmpty())
		Expect(res.Malformed).To(BeZero())
		Expect(res.Replied).To(Equal(1))
		Expect(res.Unverified).To(BeZero(), "the reply joined from its parts is verified against the agent's key")
		Expect(res.ExitCode).To(Equal(protocol.ExitOK), "%+v", res.Groups)
		Expect(res.Summary.Resources).To(Equal(orchestrator.ResourceCounts{Stable: largeCount, Changed: 1}))
		Expect(res.Hosts[0].Events).To(HaveLen(largeCount + 1))
		Expect(os.ReadFile(target)).To(Equal([]byte(canary)))
		Expect(nc.Flush()).To(Succeed())
		Expect(parts).To(BeNumerically(">", 1), "the reply came in parts")

		Eventually(func(g Gomega) {
			run, err := client.History(ctx, res.RequestID)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(run.Result.Replied).To(Equal(1))
			g.Expect(run.Result.Incomplete).To(BeEmpty())
			g.Expect(run.Result.Summary.Resources).To(Equal(orchestrator.ResourceCounts{Stable: largeCount, Changed: 1}))
			var changed []string
			for _, ev := range run.Result.Hosts[0].Events {
				if ev.Changed {
					changed = append(changed, ev.Name)
				}
			}
			g.Expect(changed).To(Equal([]string{target}))
		}).WithTimeout(30 * time.Second).Should(Succeed())

		entries, err := client.HistoryHost(ctx, fl.Identities[0], time.Time{}, 0)
		Expect(err).NotTo(HaveOccurred())
		Expect(entries).NotTo(BeEmpty())
		Expect(entries[len(entries)-1].RequestID).To(Equal(res.RequestID))
		Expect(entries[len(entries)-1].Error).To(BeNil())
		Expect(entries[len(entries)-1].Events).To(HaveLen(largeCount + 1))
	})

	It("refuses at admission a request with more resources than an agent accounts for, before anything runs", func() {
		// Short names, so that the request stays within the agent's
		// max_request_bytes: it is its resource count that is refused.
		target := filepath.Join(dir, "must-not-exist")
		bundle := largeManifest("/p", protocol.MaxRequestResources, fmt.Sprintf("        - %q: {ensure: present, content: refused, owner: root, group: root, mode: \"0644\"}\n", target))
		res, err := client.Run(ctx, orchestrator.Request{Manifest: bundle})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Replied).To(Equal(1))
		Expect(res.Hosts[0].Error).NotTo(BeNil())
		Expect(res.Hosts[0].Error.Code).To(Equal(protocol.CodeTooLarge))
		Expect(res.Hosts[0].Error.Message).To(ContainSubstring(fmt.Sprintf("declares %d resources, the limit is %d", protocol.MaxRequestResources+1, protocol.MaxRequestResources)))
		Expect(target).NotTo(BeAnExistingFile())
	})

	Context("an agent whose reply loses a part on the way", func() {
		// fake answers requests to fake-1 with a 2 MiB reply in parts,
		// all but part 2, and records the whole reply in history when
		// record is set.
		fake := func(record bool) {
			sub, err := nc.Subscribe(protocol.RequestNodeSubject("fake-1"), func(m *nats.Msg) {
				req, err := protocol.DecodeFleetRequest(m.Data, protocol.Limits{})
				if err != nil {
					return
				}
				reply := protocol.NewFleetReply(req.ID, "fake-1", time.Now())
				reply.Error = protocol.NewError(protocol.CodeInternal, "%s", strings.Repeat("canary-lost-part ", 2<<20/17))
				data, err := reply.Encode()
				if err != nil {
					return
				}
				if record {
					js, err := jetstream.New(nc)
					if err != nil {
						return
					}
					if _, err := jsstore.Publish(ctx, js, protocol.HistorySubject(req.ID, "fake-1"), protocol.HistoryMsgID(req.ID, "fake-1"), nats.Header{}, data); err != nil {
						return
					}
				}
				parts, err := protocol.Split(data, protocol.PartBytes(nc.MaxPayload(), nil))
				if err != nil {
					return
				}
				for _, p := range parts {
					if p.Index != 2 {
						_ = nc.PublishMsg(&nats.Msg{Subject: m.Reply, Header: nats.Header(p.Headers()), Data: p.Data})
					}
				}
			})
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(sub.Unsubscribe)
		}

		It("takes the host's record from history, kept whole, instead", func() {
			fake(true)
			res, err := client.Run(ctx, orchestrator.Request{Hosts: []string{"fake-1"}, Ensure: ensureRequest("exec", map[string]any{"name": "/bin/true"}), Timeout: 20 * time.Second})
			Expect(err).NotTo(HaveOccurred())
			Expect(res.NoReply).To(BeEmpty())
			Expect(res.Incomplete).To(BeEmpty())
			Expect(res.Hosts).To(HaveLen(1))
			Expect(res.Hosts[0].Source).To(Equal(orchestrator.SourceHistory))
			Expect(res.Hosts[0].Error.Message).To(HavePrefix("canary-lost-part"))
		})

		It("reports the host's reply as incomplete when history does not have it either", func() {
			fake(false)
			res, err := client.Run(ctx, orchestrator.Request{Hosts: []string{"fake-1"}, Ensure: ensureRequest("exec", map[string]any{"name": "/bin/true"}), Timeout: 3 * time.Second})
			Expect(err).NotTo(HaveOccurred())
			Expect(res.NoReply).To(Equal([]string{"fake-1"}))
			Expect(res.Incomplete).To(Equal([]string{"fake-1"}))
			Expect(res.ExitCode).To(Equal(protocol.ExitNoReply))
		})
	})
})
