package agent_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/agent"
	"github.com/ccm-fleet/ccm/internal/proctest"
	"github.com/ccm-fleet/ccm/protocol"
)

var _ = Describe("A burst of requests", func() {
	It("answers and audits each of 1,000 signed requests published at once", func() {
		kp, err := nkeys.CreateUser()
		Expect(err).ToNot(HaveOccurred())
		pub, err := kp.PublicKey()
		Expect(err).ToNot(HaveOccurred())
		dir := GinkgoT().TempDir()
		policy := filepath.Join(dir, "policy.yaml")
		Expect(os.WriteFile(policy, []byte("signers:\n  - name: ops\n    public_key: "+pub+"\n    allow: [exec]\n"), 0o600)).To(Succeed())
		state := filepath.Join(dir, "state")
		f := startAgentAs(agent.Config{Identity: "burst-1", Policy: policy, StateDir: state, MaxConcurrent: 4, QueueLength: 64}, map[string]any{"os": "debian"})
		baseline := runtime.NumGoroutine()

		const n = 1000
		inbox := f.nc.NewInbox()
		replies := make(chan *nats.Msg, n+10)
		sub, err := f.nc.ChanSubscribe(inbox, replies)
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(sub.Unsubscribe)
		msgs := make([]*nats.Msg, n)
		for i := range n {
			req := ensureRequest(fmt.Sprintf("burst-%04d", i), time.Minute, "exec", map[string]any{"name": "/bin/true"})
			req.Noop = true
			req.Sender = pub
			req.Reply = inbox
			body, err := json.Marshal(req)
			Expect(err).ToNot(HaveOccurred())
			signer, sig, err := protocol.Sign(body, kp)
			Expect(err).ToNot(HaveOccurred())
			h := nats.Header{}
			h.Set(protocol.HeaderSigner, signer)
			h.Set(protocol.HeaderSignature, sig)
			msgs[i] = &nats.Msg{Subject: protocol.RequestNodeSubject("burst-1"), Reply: inbox, Header: h, Data: body}
		}
		for _, m := range msgs {
			Expect(f.nc.PublishMsg(m)).To(Succeed())
		}
		Expect(f.nc.Flush()).To(Succeed())

		answered := map[string]protocol.Code{}
		Eventually(func() int {
			for {
				select {
				case m := <-replies:
					r, err := protocol.DecodeFleetReply(m.Data, protocol.Limits{})
					Expect(err).ToNot(HaveOccurred())
					code := protocol.Code("")
					if r.Error != nil {
						code = r.Error.Code
					}
					answered[r.RequestID] = code
				default:
					return len(answered)
				}
			}
		}).WithTimeout(60*time.Second).Should(Equal(n), "every request is answered: run or busy")
		counts := map[protocol.Code]int{}
		for _, c := range answered {
			counts[c]++
		}
		Expect(counts[""]+counts[protocol.CodeBusy]).To(Equal(n), "%v", counts)
		Expect(counts[""]).To(BeNumerically(">=", 68), "at least a full queue ran")
		GinkgoWriter.Printf("burst of %d: %v\n", n, counts)

		// One final audit line per request.
		Eventually(func() int {
			final := map[string]bool{}
			data, err := os.ReadFile(filepath.Join(state, agent.AuditFileName))
			Expect(err).ToNot(HaveOccurred())
			for _, line := range proctest.CompleteLines(data) {
				var rec agent.AuditRecord
				Expect(json.Unmarshal([]byte(line), &rec)).To(Succeed(), line)
				if rec.Result != nil {
					final[rec.RequestID] = true
				}
			}
			return len(final)
		}).WithTimeout(10 * time.Second).Should(Equal(n))
		Expect(f.agent.Stats().Dropped).To(BeZero())
		Eventually(runtime.NumGoroutine).WithTimeout(10 * time.Second).Should(BeNumerically("<=", baseline+2))
	})
})
