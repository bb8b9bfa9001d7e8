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

var _ = Describe("An agent before the assignment store exists", func() {
	It("does not look the store up every retry, and follows it from the first assignment put", func() {
		dir := GinkgoT().TempDir()
		target := filepath.Join(dir, "target")
		Expect(os.Mkdir(target, 0o755)).To(Succeed())
		ops := newForwardKey()
		policy := filepath.Join(dir, "policy.yaml")
		Expect(os.WriteFile(policy, []byte(fmt.Sprintf("signers:\n  - name: ops\n    public_key: %s\n    allow: [file]\n    assignments_admin: true\n", ops.pub)), 0o644)).To(Succeed())
		b := brokertest.Start(GinkgoT())
		// The spec's own JetStream requests (creating the store looks it
		// up too) reply to its own inbox, so the count below leaves them
		// out: it counts the agent's lookups only.
		const specInbox = "_INBOX.nostore-spec"
		nc, err := nats.Connect(b.ClientURL(), nats.CustomInboxPrefix(specInbox))
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(nc.Close)
		js, err := jetstream.New(nc)
		Expect(err).ToNot(HaveOccurred())
		_, err = jsstore.EnsureHistory(context.Background(), js, jsstore.HistoryConfig{})
		Expect(err).ToNot(HaveOccurred())

		// Every lookup of the store is a JetStream API request for its
		// stream's info: count the agent's.
		var lookups atomic.Int64
		sub, err := nc.Subscribe("$JS.API.STREAM.INFO.KV_"+protocol.AssignmentsBucket, func(m *nats.Msg) {
			if !strings.HasPrefix(m.Reply, specInbox+".") {
				lookups.Add(1)
			}
		})
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(sub.Unsubscribe)
		Expect(nc.Flush()).To(Succeed())

		fa := &forwardAgent{b: b, facts: map[string]any{"os": "debian"},
			cfg: agent.Config{Identity: "nostore-1", StateDir: filepath.Join(dir, "state"), Policy: policy, HistoryRetry: time.Second, ShutdownTimeout: 10 * time.Second}}
		started := time.Now()
		fa.start()
		// Doubling from 1 s, the fourth lookup comes after waits of at
		// least 1, 2 and 4 s: 7 s or more after the start. At a fixed 1 s
		// (splayed to 1.2 s) it would come within 3.6 s.
		Eventually(lookups.Load).WithTimeout(20 * time.Second).WithPolling(10 * time.Millisecond).Should(BeNumerically(">=", 4))
		Expect(time.Since(started)).To(BeNumerically(">=", 7*time.Second), "the agent backs off while there is no store")
		Expect(lookups.Load()).To(Equal(int64(4)), "one lookup at a time")

		// The agent's next lookup on its timer is 8 s or more after the
		// fourth; the first put wakes it sooner.
		kv, err := jsstore.EnsureAssignments(context.Background(), js, jsstore.AssignmentsConfig{})
		Expect(err).ToNot(HaveOccurred())
		before := lookups.Load()
		manifest := fmt.Sprintf(`{"manifest":{"ccm":{"resources":[{"file":[{%q:{"content":"hello","owner":"root","group":"root","mode":"0644"}}]}]}}}`, filepath.Join(target, "motd"))
		value, err := protocol.SignAssignment(&protocol.Assignment{Protocol: protocol.AssignmentProtocol, Name: "motd", Created: time.Now().UTC(),
			Interval: protocol.Duration(time.Minute), Manifest: []byte(manifest)}, ops.kp)
		Expect(err).ToNot(HaveOccurred())
		put := time.Now()
		_, err = kv.Put(context.Background(), "motd", value)
		Expect(err).ToNot(HaveOccurred())
		Eventually(func() string {
			b, _ := os.ReadFile(filepath.Join(target, "motd"))
			return string(b)
		}).WithTimeout(20 * time.Second).WithPolling(20 * time.Millisecond).Should(Equal("hello"))
		// The wake is spread over at most min(HistoryRetry, 5 s) = 1 s;
		// the timer alone would have waited 8 s or more after the fourth
		// lookup.
		Expect(time.Since(put)).To(BeNumerically("<", 5*time.Second))
		Eventually(lookups.Load).Should(Equal(before+1), "one lookup, woken by the put")
		Consistently(lookups.Load).WithTimeout(time.Second).Should(Equal(before+1), "the agent follows the store: no more lookups")
	})
})
