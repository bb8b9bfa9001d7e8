package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/agent"
	"github.com/ccm-fleet/ccm/broker"
	"github.com/ccm-fleet/ccm/broker/brokertest"
	"github.com/ccm-fleet/ccm/internal/proctest"
	"github.com/ccm-fleet/ccm/jsstore"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/providers"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/engine"
)

// forwardKey is a signer made in the test.
type forwardKey struct {
	kp  nkeys.KeyPair
	pub string
}

func newForwardKey() forwardKey {
	kp, err := nkeys.CreateUser()
	Expect(err).ToNot(HaveOccurred())
	pub, err := kp.PublicKey()
	Expect(err).ToNot(HaveOccurred())
	return forwardKey{kp: kp, pub: pub}
}

// forwardAgent is an agent on a broker that outlives it, restartable on
// the same state directory.
type forwardAgent struct {
	b      *broker.Broker
	cfg    agent.Config
	facts  map[string]any
	source agent.FactsSource
	// reg is the registry the agent's engine uses; nil: providers.Builtin
	reg   *resources.Registry
	agent *agent.Agent
	stop  func()
}

func (f *forwardAgent) start() {
	GinkgoHelper()
	nc, err := nats.Connect(f.b.ClientURL())
	Expect(err).ToNot(HaveOccurred())
	reg := f.reg
	if reg == nil {
		reg, err = providers.Builtin(providers.Options{})
		Expect(err).ToNot(HaveOccurred())
	}
	ready := make(chan struct{})
	opts := []agent.Option{agent.WithReady(func() { close(ready) })}
	if f.source != nil {
		opts = append(opts, agent.WithFactsSource(f.source))
	}
	a, err := agent.New(f.cfg, nc, engine.New(reg), f.facts, opts...)
	Expect(err).ToNot(HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	f.agent = a
	var once sync.Once
	f.stop = func() {
		once.Do(func() {
			cancel()
			Eventually(done).WithTimeout(20 * time.Second).Should(Receive(BeNil()))
			nc.Close()
		})
	}
	DeferCleanup(func() { f.stop() })
	Eventually(ready).WithTimeout(10 * time.Second).Should(BeClosed())
}

// audit returns the agent's audit lines about assignment name.
func (f *forwardAgent) audit(name string) []agent.AuditRecord {
	data, err := os.ReadFile(filepath.Join(f.cfg.StateDir, agent.AuditFileName))
	if err != nil {
		return nil
	}
	var out []agent.AuditRecord
	for _, line := range proctest.CompleteLines(data) {
		var r agent.AuditRecord
		Expect(json.Unmarshal([]byte(line), &r)).To(Succeed(), line)
		if r.Subject == "$KV."+protocol.AssignmentsBucket+"."+name {
			out = append(out, r)
		}
	}
	return out
}

var _ = Describe("Assignments only move forward", func() {
	var (
		b        *broker.Broker
		kv       jetstream.KeyValue
		dir      string
		target   string
		ops, web forwardKey
		fa       *forwardAgent
	)

	BeforeEach(func() {
		dir = GinkgoT().TempDir()
		target = filepath.Join(dir, "target")
		Expect(os.Mkdir(target, 0o755)).To(Succeed())
		ops, web = newForwardKey(), newForwardKey()
		policy := filepath.Join(dir, "policy.yaml")
		Expect(os.WriteFile(policy, []byte(fmt.Sprintf(`signers:
  - name: ops
    public_key: %s
    allow: [file]
    assignments_admin: true
  - name: web
    public_key: %s
    allow: [file]
    hosts: [role=web]
`, ops.pub, web.pub)), 0o644)).To(Succeed())
		b = brokertest.Start(GinkgoT())
		nc, err := nats.Connect(b.ClientURL())
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(nc.Close)
		js, err := jetstream.New(nc)
		Expect(err).ToNot(HaveOccurred())
		_, err = jsstore.EnsureHistory(context.Background(), js, jsstore.HistoryConfig{})
		Expect(err).ToNot(HaveOccurred())
		kv, err = jsstore.EnsureAssignments(context.Background(), js, jsstore.AssignmentsConfig{})
		Expect(err).ToNot(HaveOccurred())
		fa = &forwardAgent{b: b, facts: map[string]any{"os": "debian", "role": "web"},
			cfg: agent.Config{Identity: "fwd-1", StateDir: filepath.Join(dir, "state"), Policy: policy, HistoryRetry: 100 * time.Millisecond, ShutdownTimeout: 10 * time.Second}}
	})

	// store signs an assignment writing text to target every second and
	// stores it, returning the stored value.
	store := func(name, text string, key forwardKey) []byte {
		GinkgoHelper()
		manifest := fmt.Sprintf(`{"manifest":{"ccm":{"resources":[{"file":[{%q:{"content":%q,"owner":"root","group":"root","mode":"0644"}}]}]}}}`, filepath.Join(target, name), text)
		value, err := protocol.SignAssignment(&protocol.Assignment{Protocol: protocol.AssignmentProtocol, Name: name, Created: time.Now().UTC(),
			Interval: protocol.Duration(time.Second), Manifest: json.RawMessage(manifest)}, key.kp)
		Expect(err).ToNot(HaveOccurred())
		_, err = kv.Put(context.Background(), name, value)
		Expect(err).ToNot(HaveOccurred())
		return value
	}
	removal := func(name string, key forwardKey) {
		GinkgoHelper()
		value, err := protocol.SignAssignmentRemoval(&protocol.AssignmentRemoval{Name: name, Created: time.Now().UTC()}, key.kp)
		Expect(err).ToNot(HaveOccurred())
		_, err = kv.Put(context.Background(), name, value)
		Expect(err).ToNot(HaveOccurred())
	}
	// contentOf is the file assignment name writes (each its own).
	contentOf := func(name string) func() string {
		return func() string {
			b, _ := os.ReadFile(filepath.Join(target, name))
			return string(b)
		}
	}
	content := contentOf("motd")
	tamper := func(name string) {
		GinkgoHelper()
		Expect(os.WriteFile(filepath.Join(target, name), []byte("tampered"), 0o644)).To(Succeed())
	}
	// stillRuns tampers with name's file and waits for the next run to
	// put text back.
	stillRuns := func(name, text string) {
		GinkgoHelper()
		tamper(name)
		Eventually(contentOf(name)).WithTimeout(10*time.Second).Should(Equal(text), "the assignment keeps running")
	}
	// stopped tampers with name's file and checks no run puts anything
	// back.
	stopped := func(name string) {
		GinkgoHelper()
		tamper(name)
		Consistently(contentOf(name)).WithTimeout(3*time.Second).Should(Equal("tampered"), "the assignment no longer runs")
	}
	decisions := func(name string) []string {
		var out []string
		for _, r := range fa.audit(name) {
			out = append(out, r.Decision+": "+r.Message)
		}
		return out
	}

	It("ignores an unsigned delete of the key: audited as forbidden, the assignment keeps running", func() {
		fa.start()
		store("motd", "one", ops)
		Eventually(content).WithTimeout(10 * time.Second).Should(Equal("one"))
		Expect(kv.Delete(context.Background(), "motd")).To(Succeed())
		Eventually(func() []string { return decisions("motd") }).Should(ContainElement(
			HavePrefix("forbidden: unsigned delete of assignment motd (store revision 2) ignored: an assignment is removed only by a signed removal")))
		stillRuns("motd", "one")
		Expect(kv.Purge(context.Background(), "motd")).To(Succeed())
		Eventually(func() []string { return decisions("motd") }).Should(ContainElement(HavePrefix("forbidden: unsigned purge of assignment motd")))
		stillRuns("motd", "one")
	})

	It("refuses an older signed revision stored again after a delete, and keeps refusing it after a restart", func() {
		fa.start()
		old := store("motd", "CANARY-OLD-REVISION", ops)
		Eventually(content).WithTimeout(10 * time.Second).Should(Equal("CANARY-OLD-REVISION"))
		store("motd", "new", ops)
		Eventually(content).WithTimeout(10 * time.Second).Should(Equal("new"))
		Expect(kv.Delete(context.Background(), "motd")).To(Succeed())
		_, err := kv.Put(context.Background(), "motd", old)
		Expect(err).ToNot(HaveOccurred())
		Eventually(func() []string { return decisions("motd") }).Should(ContainElement(MatchRegexp(
			`^forbidden: assignment motd revision 4 was signed at \S+, not after revision 2 already run here`)))
		Consistently(content).WithTimeout(3 * time.Second).ShouldNot(ContainSubstring("CANARY"))
		stillRuns("motd", "new")

		// The high-water mark is in the state file, and outlives a restart:
		// the store's current value is still the old revision.
		state, err := os.ReadFile(filepath.Join(fa.cfg.StateDir, agent.AssignmentStateFileName))
		Expect(err).ToNot(HaveOccurred())
		Expect(string(state)).To(ContainSubstring(`"accepted":2`))
		fa.stop()
		tamper("motd")
		fa.start()
		Eventually(content).WithTimeout(10*time.Second).Should(Equal("new"), "the revision accepted before runs again, from the store's history")
		Consistently(content).WithTimeout(3 * time.Second).ShouldNot(ContainSubstring("CANARY"))
	})

	It("keeps running after a restart when the key was deleted meanwhile", func() {
		fa.start()
		store("motd", "one", ops)
		Eventually(content).WithTimeout(10 * time.Second).Should(Equal("one"))
		fa.stop()
		Expect(kv.Delete(context.Background(), "motd")).To(Succeed())
		tamper("motd")
		fa.start()
		Eventually(content).WithTimeout(10 * time.Second).Should(Equal("one"))
	})

	It("stops on a signed removal by the owner, and never runs a revision signed before it", func() {
		fa.start()
		old := store("motd", "CANARY-BEFORE-REMOVAL", ops)
		Eventually(content).WithTimeout(10 * time.Second).Should(Equal("CANARY-BEFORE-REMOVAL"))
		removal("motd", ops)
		Eventually(func() []string { return decisions("motd") }).Should(ContainElement("removed: assignment motd removed by a signed removal"))
		stopped("motd")
		_, err := kv.Put(context.Background(), "motd", old)
		Expect(err).ToNot(HaveOccurred())
		Eventually(func() []string { return decisions("motd") }).Should(ContainElement(ContainSubstring("an older revision stored again is not run")))
		Consistently(content).WithTimeout(3 * time.Second).Should(Equal("tampered"))
		// The name is free again: a new revision runs.
		store("motd", "again", web)
		Eventually(content).WithTimeout(10 * time.Second).Should(Equal("again"))
	})

	It("lets only the owner replace or remove an assignment", func() {
		fa.start()
		store("site", "web's", web)
		Eventually(contentOf("site")).WithTimeout(10 * time.Second).Should(Equal("web's"))
		removal("site", newForwardKey())
		Eventually(func() []string { return decisions("site") }).Should(ContainElement(HavePrefix("unauthenticated: signer")))
		stillRuns("site", "web's")

		store("motd", "ops's", ops)
		Eventually(content).WithTimeout(10 * time.Second).Should(Equal("ops's"))
		store("motd", "CANARY-NOT-THE-OWNER", web)
		Eventually(func() []string { return decisions("motd") }).Should(ContainElement(
			"forbidden: assignment motd revision 4 by signer web (" + web.pub + ") refused: the assignment belongs to signer ops (" + ops.pub + "), and only it or a signer with assignments_admin: true may replace or remove it"))
		removal("motd", web)
		Eventually(func() []string { return decisions("motd") }).Should(ContainElement(
			"forbidden: assignment motd removal 5 by signer web (" + web.pub + ") refused: the assignment belongs to signer ops (" + ops.pub + "), and only it or a signer with assignments_admin: true may replace or remove it"))
		Consistently(content).WithTimeout(3 * time.Second).ShouldNot(ContainSubstring("CANARY"))
		stillRuns("motd", "ops's")
	})

	// Issue 39, finding 10: an agent that first started after a rival
	// trusted signer overwrote a name took the rival as the owner, since
	// the first revision it saw was the rival's. The owner now comes from
	// the store's history of the key.
	It("takes a name's owner from the store's history, not from the first revision it sees", func() {
		store("motd", "ops's", ops)
		store("motd", "CANARY-RIVAL-OVERWRITE", web) // refused by every agent watching then
		store("site", "web's", web)
		store("site", "ops's fix", ops) // an administrator's replacement: web still owns site
		store("free", "ops's", ops)
		removal("free", ops) // the name is free again
		store("free", "web's", web)
		fa.start()

		Eventually(func() []string { return decisions("motd") }).Should(ContainElement(
			"forbidden: assignment motd revision 2 by signer web (" + web.pub + ") refused: the assignment belongs to signer ops (" + ops.pub + "), and only it or a signer with assignments_admin: true may replace or remove it"))
		Consistently(content).WithTimeout(2 * time.Second).ShouldNot(ContainSubstring("CANARY"))
		store("motd", "ops's again", ops)
		Eventually(content).WithTimeout(10*time.Second).Should(Equal("ops's again"), "the owner's next revision runs")

		Eventually(contentOf("site")).WithTimeout(10 * time.Second).Should(Equal("ops's fix"))
		store("site", "web's again", web)
		Eventually(contentOf("site")).WithTimeout(10*time.Second).Should(Equal("web's again"), "web still owns site")

		Eventually(contentOf("free")).WithTimeout(10*time.Second).Should(Equal("web's"), "after a signed removal the name went to its next signer")
	})

	It("lets an assignments administrator replace and remove another signer's assignment", func() {
		fa.start()
		site := contentOf("site")
		store("site", "web's", web)
		Eventually(site).WithTimeout(10 * time.Second).Should(Equal("web's"))
		store("site", "ops's fix", ops)
		Eventually(site).WithTimeout(10 * time.Second).Should(Equal("ops's fix"))
		// The owner is still web: it may replace it again.
		store("site", "web's again", web)
		Eventually(site).WithTimeout(10 * time.Second).Should(Equal("web's again"))
		removal("site", ops)
		Eventually(func() []string { return decisions("site") }).Should(ContainElement(HavePrefix("removed: ")))
		stopped("site")
	})

	It("stops an assignment when the host's facts leave its signer's hosts scope, and resumes when they come back", func() {
		var mu sync.Mutex
		facts := map[string]any{"os": "debian", "role": "web"}
		fa.source = func(context.Context) (map[string]any, error) {
			mu.Lock()
			defer mu.Unlock()
			return map[string]any{"os": facts["os"], "role": facts["role"]}, nil
		}
		setRole := func(role string) {
			mu.Lock()
			facts["role"] = role
			mu.Unlock()
			Expect(fa.agent.RefreshFacts(context.Background())).To(Succeed())
		}
		fa.start()
		site := contentOf("site")
		store("site", "CANARY-SCOPED", web)
		Eventually(site).WithTimeout(10 * time.Second).Should(Equal("CANARY-SCOPED"))

		setRole("db")
		Eventually(func() []string { return decisions("site") }).Should(ContainElement(MatchRegexp(`^forbidden: signer web: denied host .* by hosts`)))
		var refusal agent.AuditRecord
		for _, r := range fa.audit("site") {
			if r.Decision == string(protocol.CodeForbidden) {
				refusal = r
			}
		}
		Expect(refusal.Rule).To(ContainSubstring("role=web"))
		stopped("site")

		setRole("web")
		Eventually(site).WithTimeout(10 * time.Second).Should(Equal("CANARY-SCOPED"))
		stillRuns("site", "CANARY-SCOPED")
	})

	It("keeps no state for names it never accepted: a store writer cannot fill the state file", func() {
		fa.start()
		store("motd", "one", ops)
		Eventually(content).WithTimeout(10 * time.Second).Should(Equal("one"))
		for i := range 20 {
			_, err := kv.Put(context.Background(), fmt.Sprintf("junk-%d", i), []byte(`{"protocol":"io.choria.ccm.v1.assignment.signed","assignment":"e30=","signer":"","signature":""}`))
			Expect(err).ToNot(HaveOccurred())
		}
		Eventually(func() []string { return decisions("junk-19") }).Should(ContainElement(ContainSubstring("is not signed")))
		state, err := os.ReadFile(filepath.Join(fa.cfg.StateDir, agent.AssignmentStateFileName))
		Expect(err).ToNot(HaveOccurred())
		Expect(string(state)).To(ContainSubstring(`"motd"`))
		Expect(string(state)).ToNot(ContainSubstring("junk"))
	})

	It("fails closed on a corrupt state file, naming it", func() {
		Expect(os.MkdirAll(fa.cfg.StateDir, 0o700)).To(Succeed())
		path := filepath.Join(fa.cfg.StateDir, agent.AssignmentStateFileName)
		Expect(os.WriteFile(path, []byte(`{"motd":{"revision":"one"}}`), 0o600)).To(Succeed())
		nc, err := nats.Connect(b.ClientURL())
		Expect(err).ToNot(HaveOccurred())
		defer nc.Close()
		reg, err := providers.Builtin(providers.Options{})
		Expect(err).ToNot(HaveOccurred())
		_, err = agent.New(fa.cfg, nc, engine.New(reg), fa.facts)
		Expect(err).To(MatchError(agent.ErrAssignmentState))
		Expect(err.Error()).To(ContainSubstring(path))
		Expect(strings.Count(err.Error(), "high-water")).To(Equal(1))
	})
})
