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
	"github.com/nats-io/nats.go/jetstream"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/broker/brokertest"
	"github.com/ccm-fleet/ccm/jsstore"
	"github.com/ccm-fleet/ccm/orchestrator"
	"github.com/ccm-fleet/ccm/protocol"
)

// writeLargeManifest writes a manifest of count files below dir that are
// absent and stay absent (stable: the padding), then the file resources
// extra, and returns its path.
func writeLargeManifest(dir, padDir string, count int, extra string) string {
	GinkgoHelper()
	var b strings.Builder
	b.WriteString("ccm:\n  resources:\n    - file:\n")
	for i := range count {
		fmt.Fprintf(&b, "        - %q: {ensure: absent}\n", filepath.Join(padDir, fmt.Sprintf("p%d", i)))
	}
	b.WriteString(extra)
	path := filepath.Join(dir, fmt.Sprintf("large-%d.yaml", count))
	Expect(os.WriteFile(path, []byte(b.String()), 0o644)).To(Succeed())
	return path
}

// Round 3: results of any size are kept. A reply or history record larger
// than the broker's max payload (1 MiB) travels and is kept in parts; a
// request an agent cannot account for is refused before it runs.
var _ = Describe("round 3: large runs are kept whole", Ordered, func() {
	// largeCount resources make a reply of about 8 MB: eight messages of
	// the broker's max payload.
	const largeCount = 10000
	var f *fleet
	BeforeAll(func() {
		f = startFleetWith(fleetOptions{history: true, config: historyAgentConfig}, 1, "large", map[string]any{"role": "web"})
	})

	It("keeps a real change hidden among 10,000 no-op resources in the report and in history show", func() {
		dir := GinkgoT().TempDir()
		canary := fmt.Sprintf("canary-large-%d", time.Now().UnixNano())
		target := filepath.Join(dir, canary)
		path := writeLargeManifest(dir, dir, largeCount,
			fmt.Sprintf("        - %q: {ensure: present, content: %q, owner: root, group: root, mode: \"0644\"}\n", target, canary))

		code, out, errOut := f.orch("apply", path, "--reply-timeout", "50s", "--json")
		Expect(code).To(Equal(0), "stdout %.2000s\nstderr %s", out, errOut)
		Expect(out).To(ContainSubstring(canary), "the real change is in the report")
		var doc map[string]any
		Expect(json.Unmarshal([]byte(out), &doc)).To(Succeed())
		Expect(doc).To(HaveKeyWithValue("no_reply", BeEmpty()))
		Expect(doc).NotTo(HaveKey("incomplete"))
		Expect(doc).To(HaveKeyWithValue("summary", HaveKeyWithValue("resources",
			And(HaveKeyWithValue("stable", BeNumerically("==", largeCount)), HaveKeyWithValue("changed", BeNumerically("==", 1))))))
		Expect(os.ReadFile(target)).To(Equal([]byte(canary)))
		first, _ := doc["request_id"].(string)
		Expect(first).NotTo(BeEmpty())

		// The run, from history: every resource counted, the one change
		// named.
		Eventually(func(g Gomega) {
			code, listing, _ := f.orch("history", "list", "--json")
			g.Expect(code).To(Equal(0))
			var runs []orchestrator.HistorySummary
			g.Expect(json.Unmarshal([]byte(listing), &runs)).To(Succeed(), listing)
			g.Expect(runs).To(HaveLen(1))
			g.Expect(runs[0].RequestID).To(Equal(first))
			g.Expect(runs[0].Replied).To(Equal(1), "history has the host's record")
		}).WithTimeout(60 * time.Second).WithPolling(time.Second).Should(Succeed())
		code, shown, errOut := f.orch("history", "show", first)
		Expect(code).To(Equal(0), "stdout %s\nstderr %s", shown, errOut)
		Expect(shown).To(ContainSubstring(canary), "the real change is in history show")
		code, shownDoc := f.orchJSON("history", "show", first)
		Expect(code).To(Equal(0))
		Expect(shownDoc).To(HaveKeyWithValue("summary", HaveKeyWithValue("resources",
			And(HaveKeyWithValue("stable", BeNumerically("==", largeCount)), HaveKeyWithValue("changed", BeNumerically("==", 1))))))
	})

	It("refuses at admission, with too_large, a request declaring more resources than an agent accounts for", func() {
		dir := GinkgoT().TempDir()
		canary := fmt.Sprintf("canary-refused-%d", time.Now().UnixNano())
		target := filepath.Join(dir, canary)
		// Short names keep the request within the agent's 1 MiB: it is
		// the resource count that is refused.
		path := writeLargeManifest(dir, "/p", protocol.MaxRequestResources,
			fmt.Sprintf("        - %q: {ensure: present, content: %q, owner: root, group: root, mode: \"0644\"}\n", target, canary))
		code, out, errOut := f.orch("apply", path)
		Expect(code).To(Equal(int(protocol.ExitFailed)), "stdout %s\nstderr %s", out, errOut)
		Expect(out).To(ContainSubstring("too_large"))
		Expect(out).To(ContainSubstring(fmt.Sprintf("declares %d resources, the limit is %d", protocol.MaxRequestResources+1, protocol.MaxRequestResources)))
		Expect(target).NotTo(BeAnExistingFile(), "nothing ran")
	})
})

var _ = Describe("round 3: an assignment watching 2,000 files", func() {
	It("is recorded in history and reported converged by ccm-orch status, not stale", func() {
		const watched = 2000
		dir := GinkgoT().TempDir()
		target := filepath.Join(dir, "target")
		Expect(os.MkdirAll(target, 0o755)).To(Succeed())
		canary := fmt.Sprintf("canary-watch-%d", time.Now().UnixNano())
		ops := newSigningKey(dir, "ops")
		b := brokertest.Start(GinkgoT())
		nc, err := nats.Connect(b.ClientURL())
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(nc.Close)
		js, err := jetstream.New(nc)
		Expect(err).ToNot(HaveOccurred())
		ctx := context.Background()
		_, err = jsstore.EnsureHistory(ctx, js, jsstore.HistoryConfig{})
		Expect(err).ToNot(HaveOccurred())
		_, err = jsstore.EnsureAssignments(ctx, js, jsstore.AssignmentsConfig{})
		Expect(err).ToNot(HaveOccurred())
		_, err = jsstore.EnsureRegistry(ctx, js, jsstore.RegistryConfig{})
		Expect(err).ToNot(HaveOccurred())
		fa := &fleetAgent{b: b, identity: "watch-large-1", stateDir: filepath.Join(dir, "state"), policy: policyFile(dir, signerEntry("ops", ops.pub, "file")),
			facts: map[string]any{"role": "web"}}
		fa.start()
		DeferCleanup(func() { fa.stop() })

		files := make([]string, 0, watched)
		for i := range watched - 1 {
			files = append(files, fmt.Sprintf(`{%q:{"content":"managed\n","owner":"root","group":"root","mode":"0644","watch":true}}`, filepath.Join(target, fmt.Sprintf("w%04d", i))))
		}
		canaryFile := filepath.Join(target, canary)
		files = append(files, fmt.Sprintf(`{%q:{"content":%q,"owner":"root","group":"root","mode":"0644","watch":true}}`, canaryFile, canary))
		client := orchestrator.New(nc)
		_, err = client.Assign(ctx, &protocol.Assignment{
			Protocol: protocol.AssignmentProtocol, Name: "many", Interval: protocol.Duration(time.Hour),
			Manifest: json.RawMessage(`{"manifest":{"ccm":{"resources":[{"file":[` + strings.Join(files, ",") + `]}]}}}`),
		}, ops.kp)
		Expect(err).ToNot(HaveOccurred())
		Eventually(func() string { b, _ := os.ReadFile(canaryFile); return string(b) }).WithTimeout(60 * time.Second).Should(Equal(canary))

		var host orchestrator.HostStatus
		Eventually(func(g Gomega) {
			code, out, _ := runOrch("status", "--json", "--server", b.ClientURL())
			var rep orchestrator.StatusReport
			g.Expect(json.Unmarshal([]byte(out), &rep)).To(Succeed(), out)
			g.Expect(rep.Assignments).To(HaveLen(1))
			g.Expect(rep.Assignments[0].Hosts).To(HaveLen(1))
			host = rep.Assignments[0].Hosts[0]
			g.Expect(host.State).To(Equal(orchestrator.StateConverged), "%+v", host)
			g.Expect(code).To(Equal(0))
		}).WithTimeout(60 * time.Second).WithPolling(time.Second).Should(Succeed())
		Expect(host.Changed).To(Equal(watched))

		code, shown, errOut := runOrch("history", "show", host.RequestID, "--server", b.ClientURL())
		Expect(code).To(Equal(0), "stdout %s\nstderr %s", shown, errOut)
		Expect(shown).To(ContainSubstring(canary), "the run, with its canary file, is in history show")

		// A tamper of the canary file is repaired and recorded too.
		Expect(os.WriteFile(canaryFile, []byte("tampered"), 0o644)).To(Succeed())
		Eventually(func() string { b, _ := os.ReadFile(canaryFile); return string(b) }).WithTimeout(30 * time.Second).Should(Equal(canary))
	})
})
