package agent_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/agent"
	"github.com/ccm-fleet/ccm/broker/brokertest"
	"github.com/ccm-fleet/ccm/jsstore"
	"github.com/ccm-fleet/ccm/protocol"
)

// noStoreFixture is an agent started before the assignment store exists,
// with the count of its lookups of the store.
type noStoreFixture struct {
	js      jetstream.JetStream
	ops     forwardKey
	target  string
	lookups *atomic.Int64
	started time.Time
}

// writeOpsPolicy writes the policy of the assignment specs into dir: one
// signer, ops, allowed file resources and assignments_admin; it returns
// the file's path.
func writeOpsPolicy(dir string, ops forwardKey) string {
	GinkgoHelper()
	policy := filepath.Join(dir, "policy.yaml")
	Expect(os.WriteFile(policy, []byte(fmt.Sprintf("signers:\n  - name: ops\n    public_key: %s\n    allow: [file]\n    assignments_admin: true\n", ops.pub)), 0o644)).To(Succeed())
	return policy
}

// startNoStore starts an agent whose lookups of a missing store back off
// from retry.
func startNoStore(retry time.Duration) *noStoreFixture {
	GinkgoHelper()
	dir := GinkgoT().TempDir()
	f := &noStoreFixture{target: filepath.Join(dir, "target"), ops: newForwardKey(), lookups: &atomic.Int64{}}
	Expect(os.Mkdir(f.target, 0o755)).To(Succeed())
	policy := writeOpsPolicy(dir, f.ops)
	b := brokertest.Start(GinkgoT())
	// The spec's own JetStream requests (creating the store looks it up
	// too) reply to its own inbox, so the count leaves them out: it counts
	// the agent's lookups only.
	const specInbox = "_INBOX.nostore-spec"
	nc, err := nats.Connect(b.ClientURL(), nats.CustomInboxPrefix(specInbox))
	Expect(err).ToNot(HaveOccurred())
	DeferCleanup(nc.Close)
	f.js, err = jetstream.New(nc)
	Expect(err).ToNot(HaveOccurred())
	_, err = jsstore.EnsureHistory(context.Background(), f.js, jsstore.HistoryConfig{})
	Expect(err).ToNot(HaveOccurred())

	// Every lookup of the store is a JetStream API request for its
	// stream's info: count the agent's.
	sub, err := nc.Subscribe("$JS.API.STREAM.INFO.KV_"+protocol.AssignmentsBucket, func(m *nats.Msg) {
		if !strings.HasPrefix(m.Reply, specInbox+".") {
			f.lookups.Add(1)
		}
	})
	Expect(err).ToNot(HaveOccurred())
	DeferCleanup(sub.Unsubscribe)
	Expect(nc.Flush()).To(Succeed())

	fa := &forwardAgent{b: b, facts: map[string]any{"os": "debian"},
		cfg: agent.Config{Identity: "nostore-1", StateDir: filepath.Join(dir, "state"), Policy: policy, HistoryRetry: retry, ShutdownTimeout: 10 * time.Second}}
	f.started = time.Now()
	fa.start()
	return f
}

// put creates the store and puts an assignment writing motd.
func (f *noStoreFixture) put() {
	GinkgoHelper()
	kv, err := jsstore.EnsureAssignments(context.Background(), f.js, jsstore.AssignmentsConfig{})
	Expect(err).ToNot(HaveOccurred())
	manifest := fmt.Sprintf(`{"manifest":{"ccm":{"resources":[{"file":[{%q:{"content":"hello","owner":"root","group":"root","mode":"0644"}}]}]}}}`, filepath.Join(f.target, "motd"))
	value, err := protocol.SignAssignment(&protocol.Assignment{Protocol: protocol.AssignmentProtocol, Name: "motd", Created: time.Now().UTC(),
		Interval: protocol.Duration(time.Minute), Manifest: []byte(manifest)}, f.ops.kp)
	Expect(err).ToNot(HaveOccurred())
	_, err = kv.Put(context.Background(), "motd", value)
	Expect(err).ToNot(HaveOccurred())
}

var _ = Describe("An agent before the assignment store exists", func() {
	It("does not look the store up every retry: it backs off, one lookup at a time", func() {
		f := startNoStore(time.Second)
		// Doubling from 1 s, the fourth lookup comes after waits of at
		// least 1, 2 and 4 s: 7 s or more after the start. At a fixed 1 s
		// (splayed to 1.2 s) it would come within 3.6 s.
		Eventually(f.lookups.Load).WithTimeout(20 * time.Second).WithPolling(10 * time.Millisecond).Should(BeNumerically(">=", 4))
		Expect(time.Since(f.started)).To(BeNumerically(">=", 7*time.Second), "the agent backs off while there is no store")
		Expect(f.lookups.Load()).To(Equal(int64(4)), "one lookup at a time")
	})

	It("follows the store from the first assignment put, woken by it rather than its timer", func() {
		// After its first lookup the agent's timer waits 10 minutes: only
		// the put's change can make it look again within the spec.
		f := startNoStore(10 * time.Minute)
		Eventually(f.lookups.Load).WithTimeout(20 * time.Second).Should(Equal(int64(1)))
		f.put()
		Eventually(func() string {
			b, _ := os.ReadFile(filepath.Join(f.target, "motd"))
			return string(b)
		}).WithTimeout(30 * time.Second).WithPolling(20 * time.Millisecond).Should(Equal("hello"))
		Expect(f.lookups.Load()).To(Equal(int64(2)), "one lookup, woken by the put")
		Consistently(f.lookups.Load).WithTimeout(time.Second).Should(Equal(int64(2)), "the agent follows the store: no more lookups")
	})
})
