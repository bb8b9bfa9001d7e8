package orchestrator_test

import (
	"context"
	"encoding/json"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/agent"
	"github.com/ccm-fleet/ccm/jsstore"
	"github.com/ccm-fleet/ccm/orchestrator"
	"github.com/ccm-fleet/ccm/orchestrator/fleettest"
	"github.com/ccm-fleet/ccm/protocol"
)

var _ = Describe("Client.History", Ordered, func() {
	var (
		fl     *fleettest.Fleet
		client *orchestrator.Client
		ctx    = context.Background()
	)
	BeforeAll(func() {
		fl = fleettest.StartWith(GinkgoT(), fleettest.Options{History: true, Config: agent.Config{HistoryRetry: 100 * time.Millisecond}},
			fleetSize, map[string]any{"kernel": "Linux"}, fleetVary...)
		client = orchestrator.New(fl.Connect(GinkgoT()), orchestrator.WithSender("tester@here"))
	})

	// sameJSON compares two results as their JSON documents, but elapsed.
	sameJSON := func(a, b *orchestrator.Result) {
		GinkgoHelper()
		doc := func(r *orchestrator.Result) map[string]any {
			raw, err := json.Marshal(r)
			Expect(err).NotTo(HaveOccurred())
			var m map[string]any
			Expect(json.Unmarshal(raw, &m)).To(Succeed())
			delete(m, "elapsed")
			return m
		}
		Expect(doc(a)).To(Equal(doc(b)))
	}

	// recorded waits until every reply of res is in history and returns the run.
	recorded := func(res *orchestrator.Result) *orchestrator.HistoryRun {
		GinkgoHelper()
		var run *orchestrator.HistoryRun
		Eventually(func() int {
			var err error
			run, err = client.History(ctx, res.RequestID)
			Expect(err).NotTo(HaveOccurred())
			return run.Result.Replied
		}).WithTimeout(10 * time.Second).Should(Equal(res.Replied))
		return run
	}

	It("rebuilds a manifest run's per-resource report, and records who sent what", func() {
		dir := GinkgoT().TempDir()
		bundle := loadBundle(`
ccm:
  resources:
    - exec:
        - "/bin/true":
            alias: first
        - "/bin/false":
            require: ["exec#first"]
    - file:
        - "`+dir+`/{{ lookup('facts.identity') }}":
            ensure: directory
            owner: root
            group: root
            mode: "0755"
`, nil)
		res, err := client.Run(ctx, orchestrator.Request{Manifest: bundle, ManifestName: "site.yaml", Filter: mustFilter([]string{"os=debian"}, nil)})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.ExitCode).To(Equal(protocol.ExitFailed))
		Expect(res.HistoryError).To(BeEmpty())
		run := recorded(res)
		sameJSON(run.Result, res)
		Expect(run.Request.Sender).To(Equal("tester@here"))
		Expect(run.Request.Manifest).To(Equal("site.yaml"))
		Expect(orchestrator.DescribeRequest(run.Request)).To(Equal("apply site.yaml"))
		Expect(orchestrator.FilterString(run.Request.Filter)).To(Equal("os=debian"))
		Expect(run.Request.Resources).To(HaveLen(3))
	})

	It("lists requests newest first and one host's timeline", func() {
		res, err := client.Run(ctx, orchestrator.Request{Ensure: ensureRequest("exec", map[string]any{"name": "/bin/true"}), Hosts: []string{"sim-0001"}, Noop: true})
		Expect(err).NotTo(HaveOccurred())
		recorded(res)
		list, err := client.HistoryList(ctx, orchestrator.HistoryListOptions{Limit: 1})
		Expect(err).NotTo(HaveOccurred())
		Expect(list).To(HaveLen(1))
		Expect(list[0]).To(And(
			HaveField("RequestID", res.RequestID),
			HaveField("Asked", "ensure exec#/bin/true"),
			HaveField("Noop", true),
			HaveField("Expected", 1),
		))
		entries, err := client.HistoryHost(ctx, "sim-0001", time.Time{}, 0)
		Expect(err).NotTo(HaveOccurred())
		Expect(entries).To(HaveLen(2))
		Expect(entries[0].Asked).To(Equal("apply site.yaml"))
		Expect(entries[0].Outcome).To(Equal(orchestrator.OutcomeFailed))
		Expect(entries[1].RequestID).To(Equal(res.RequestID))
		Expect(entries[1].Outcome).To(Equal(orchestrator.OutcomeWouldChange))
		last, err := client.HistoryHost(ctx, "sim-0001", time.Time{}, 1)
		Expect(err).NotTo(HaveOccurred())
		Expect(last).To(Equal(entries[1:]))
	})

	It("refuses what it cannot look up and says what is missing", func() {
		_, err := client.History(ctx, "bad id")
		Expect(err).To(MatchError(orchestrator.ErrInvalid))
		_, err = client.History(ctx, "unknown")
		Expect(err).To(MatchError(orchestrator.ErrNotFound))
		_, err = client.HistoryList(ctx, orchestrator.HistoryListOptions{Limit: -1})
		Expect(err).To(MatchError(orchestrator.ErrInvalid))
		_, err = client.Run(ctx, orchestrator.Request{Ensure: ensureRequest("exec", map[string]any{"name": "/bin/true"}), Async: true, Batch: 2})
		Expect(err).To(MatchError(orchestrator.ErrInvalid))
	})
})

var _ = Describe("Client.Run without a history stream", func() {
	It("runs and says why it was not recorded; an asynchronous run is refused", func() {
		fl := startFleet()
		client := orchestrator.New(fl.Connect(GinkgoT()))
		res, err := client.Run(context.Background(), orchestrator.Request{Ensure: ensureRequest("exec", map[string]any{"name": "/bin/true"}), Hosts: []string{"sim-0001"}})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Replied).To(Equal(1))
		Expect(res.HistoryError).To(ContainSubstring("no history stream"))
		_, err = client.Run(context.Background(), orchestrator.Request{Ensure: ensureRequest("exec", map[string]any{"name": "/bin/true"}), Hosts: []string{"sim-0001"}, Async: true})
		Expect(err).To(MatchError(jsstore.ErrNoHistory))
		_, err = client.History(context.Background(), "whatever")
		Expect(err).To(MatchError(jsstore.ErrNoHistory))
	})
})
