package agent_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
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
		nc, err := nats.Connect(b.ClientURL())
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(nc.Close)
		js, err := jetstream.New(nc)
		Expect(err).ToNot(HaveOccurred())
		_, err = jsstore.EnsureHistory(context.Background(), js, jsstore.HistoryConfig{})
		Expect(err).ToNot(HaveOccurred())

		// Every lookup of the store is a JetStream API request for its
		// stream's info: count them.
		var lookups atomic.Int64
		sub, err := nc.Subscribe("$JS.API.STREAM.INFO.KV_"+protocol.AssignmentsBucket, func(*nats.Msg) { lookups.Add(1) })
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(sub.Unsubscribe)
		Expect(nc.Flush()).To(Succeed())

		fa := &forwardAgent{b: b, facts: map[string]any{"os": "debian"},
			cfg: agent.Config{Identity: "nostore-1", StateDir: filepath.Join(dir, "state"), Policy: policy, HistoryRetry: time.Second, ShutdownTimeout: 10 * time.Second}}
		fa.start()
		// At a fixed 1 s (splayed to 1.2 s) the agent would ask 7 to 9
		// times in 8 s; doubling from 1 s, at most 4 (at 0 s, then after
		// 1, 2 and 4 s and their splay).
		time.Sleep(8 * time.Second)
		Expect(lookups.Load()).To(BeNumerically(">=", 1), "the agent looked the store up")
		Expect(lookups.Load()).To(BeNumerically("<=", 4), "the agent backs off while there is no store")

		// The agent's next lookup on its timer is at 15 s at the earliest
		// (after waits of 1, 2, 4 and 8 s), 7 s from now; the first put
		// wakes it sooner.
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
		Expect(lookups.Load()).To(Equal(before+1), "one lookup, woken by the put")
		// The wake is spread over at most min(HistoryRetry, 5 s) = 1 s;
		// the timer alone would have waited 7 s or more.
		Expect(time.Since(put)).To(BeNumerically("<", 5*time.Second))
	})
})
