package integration_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	"github.com/onsi/gomega/gexec"

	"github.com/ccm-fleet/ccm/broker/brokertest"
	"github.com/ccm-fleet/ccm/jsstore"
	"github.com/ccm-fleet/ccm/protocol"
)

// Round 3 of the adversarial review, assignments: each spec attacks as
// written in the finding, with the real ccm-agent and ccm-orch and a
// plain NATS client, and plants a canary that must never reach the host.
var _ = Describe("Adversarial, round 3: assignments", func() {
	var (
		dir, target, url string
		kv               jetstream.KeyValue
		js               jetstream.JetStream
		ops, web, other  signingKey
		policy           string
	)

	BeforeEach(func() {
		dir = GinkgoT().TempDir()
		target = filepath.Join(dir, "target")
		Expect(os.Mkdir(target, 0o755)).To(Succeed())
		ops, web, other = newSigningKey(dir, "ops"), newSigningKey(dir, "web"), newSigningKey(dir, "other")
		policy = policyFile(dir,
			signerEntry("ops", ops.pub, "file"),
			signerEntry("web", web.pub, "file", "hosts: [role=web]"),
			signerEntry("other", other.pub, "file"))
		b := brokertest.Start(GinkgoT())
		url = b.ClientURL()
		code, _, errOut := runOrch("history", "init", "--server", url)
		Expect(code).To(Equal(0), errOut)
		nc, err := nats.Connect(url)
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(nc.Close)
		js, err = jetstream.New(nc)
		Expect(err).ToNot(HaveOccurred())
		kv, err = js.KeyValue(context.Background(), protocol.AssignmentsBucket)
		Expect(err).ToNot(HaveOccurred())
		Expect(os.Getenv("CCM_KEY")).To(BeEmpty(), "ccm-orch runs without a key unless given one")
	})

	// startAgent runs ccm-agent as identity with the facts of factsFile,
	// gathered again every second, its state in dir/identity.
	startAgent := func(identity, factsFile string) *gexec.Session {
		GinkgoHelper()
		s := startProcess(ccmAgentBin(), "-v", "run", "--server", url, "--identity", identity, "--policy", policy,
			"--state-dir", filepath.Join(dir, identity), "--facts-file", factsFile, "--facts-interval", "1s", "--heartbeat", "1s")
		Eventually(s.Err).WithTimeout(20 * time.Second).Should(gbytes.Say("serving"))
		return s
	}
	stopAgent := func(s *gexec.Session) {
		GinkgoHelper()
		s.Interrupt()
		Eventually(s).WithTimeout(30 * time.Second).Should(gexec.Exit())
	}
	factsFile := func(name, role string) string {
		GinkgoHelper()
		path := filepath.Join(dir, name)
		Expect(os.WriteFile(path, []byte("role: "+role+"\n"), 0o644)).To(Succeed())
		return path
	}
	// assign stores an assignment writing text to target/name every
	// second with ccm-orch, signed with key.
	assign := func(name, text string, key signingKey) {
		GinkgoHelper()
		manifest := filepath.Join(dir, name+".yaml")
		Expect(os.WriteFile(manifest, []byte(fmt.Sprintf(`ccm:
  resources:
    - file:
        - %s:
            content: %q
            owner: root
            group: root
            mode: "0644"
`, filepath.Join(target, name), text)), 0o644)).To(Succeed())
		code, out, errOut := runOrch("assign", name, manifest, "--interval", "1s", "--key", key.seedFile, "--server", url)
		Expect(code).To(Equal(0), out+errOut)
	}
	contentOf := func(name string) func() string {
		return func() string {
			b, _ := os.ReadFile(filepath.Join(target, name))
			return string(b)
		}
	}
	auditOf := func(identity, name string) func() []string {
		return func() []string {
			b, _ := os.ReadFile(filepath.Join(dir, identity, "audit.log"))
			var out []string
			for _, l := range strings.Split(string(b), "\n") {
				if strings.Contains(l, `"subject":"$KV.`+protocol.AssignmentsBucket+"."+name+`"`) {
					out = append(out, l)
				}
			}
			return out
		}
	}

	It("finding 3: an unsigned raw delete, then the older signed revision stored again, never rolls a host back", func() {
		canary := fmt.Sprintf("CANARY-3-OLD-REVISION-%d", time.Now().UnixNano())
		agentProc := startAgent("adv3-1", factsFile("facts.yaml", "web"))
		content := contentOf("rollback")
		assign("rollback", canary, ops)
		Eventually(content).WithTimeout(20 * time.Second).Should(Equal(canary))
		assign("rollback", "current", ops)
		Eventually(content).WithTimeout(20 * time.Second).Should(Equal("current"))

		// A NATS user who can write the bucket, with no key at all.
		ctx := context.Background()
		old, err := kv.GetRevision(ctx, "rollback", 1)
		Expect(err).ToNot(HaveOccurred())
		Expect(kv.Delete(ctx, "rollback")).To(Succeed())
		_, err = kv.Put(ctx, "rollback", old.Value())
		Expect(err).ToNot(HaveOccurred())
		Consistently(content).WithTimeout(5 * time.Second).ShouldNot(ContainSubstring(canary))
		Eventually(auditOf("adv3-1", "rollback")).WithTimeout(20 * time.Second).Should(ContainElement(And(
			ContainSubstring(`"decision":"forbidden"`), ContainSubstring("unsigned delete of assignment rollback"))))
		Eventually(auditOf("adv3-1", "rollback")).WithTimeout(20 * time.Second).Should(ContainElement(And(
			ContainSubstring(`"decision":"forbidden"`), ContainSubstring("an older revision stored again is not run"))))

		// The current revision keeps running: a change is repaired.
		Expect(os.WriteFile(filepath.Join(target, "rollback"), []byte("drift"), 0o644)).To(Succeed())
		Eventually(content).WithTimeout(20 * time.Second).Should(Equal("current"))

		// A restart remembers: the store still holds the old revision.
		stopAgent(agentProc)
		Expect(os.WriteFile(filepath.Join(target, "rollback"), []byte("drift"), 0o644)).To(Succeed())
		startAgent("adv3-1", filepath.Join(dir, "facts.yaml"))
		Eventually(content).WithTimeout(20 * time.Second).Should(Equal("current"))
		Consistently(content).WithTimeout(5 * time.Second).ShouldNot(ContainSubstring(canary))
	})

	It("finding 4: assignments rm needs a key, and no bucket writer or other team removes a team's assignment", func() {
		canary := fmt.Sprintf("CANARY-4-LEFT-UNMANAGED-%d", time.Now().UnixNano())
		startAgent("adv4-1", factsFile("facts.yaml", "web"))
		content := contentOf("team-site")
		assign("team-site", "team config", web)
		Eventually(content).WithTimeout(20 * time.Second).Should(Equal("team config"))
		// stillManaged plants the canary on the host and waits for the
		// team's assignment to take it away again.
		stillManaged := func() {
			GinkgoHelper()
			Expect(os.WriteFile(filepath.Join(target, "team-site"), []byte(canary), 0o644)).To(Succeed())
			Eventually(content).WithTimeout(20*time.Second).Should(Equal("team config"), "the team's assignment still runs")
			Consistently(content).WithTimeout(3 * time.Second).ShouldNot(ContainSubstring(canary))
		}

		code, out, errOut := runOrch("assignments", "rm", "team-site", "--server", url)
		Expect(code).To(Equal(1), out)
		Expect(errOut).To(ContainSubstring("--key FILE (or CCM_KEY) is required"))
		code, out, _ = runOrch("assignments", "show", "team-site", "--server", url)
		Expect(code).To(Equal(0))
		Expect(out).To(ContainSubstring("assignment team-site, revision 1"))
		stillManaged()

		// Any NATS user who can write the bucket: a delete, then a purge.
		Expect(kv.Delete(context.Background(), "team-site")).To(Succeed())
		stillManaged()
		Expect(kv.Purge(context.Background(), "team-site")).To(Succeed())
		stillManaged()
		Expect(auditOf("adv4-1", "team-site")()).To(ContainElements(
			And(ContainSubstring(`"decision":"forbidden"`), ContainSubstring("unsigned delete")),
			And(ContainSubstring(`"decision":"forbidden"`), ContainSubstring("unsigned purge"))))

		// Another team's trusted key signs a removal: refused, naming the
		// owner.
		assign("team-site", "team config", web)
		Eventually(func() int {
			code, _, _ := runOrch("assignments", "rm", "team-site", "--key", other.seedFile, "--server", url)
			return code
		}).WithTimeout(20 * time.Second).Should(Equal(0))
		Eventually(auditOf("adv4-1", "team-site")).WithTimeout(20 * time.Second).Should(ContainElement(And(
			ContainSubstring(`"decision":"forbidden"`), ContainSubstring("the assignment belongs to signer web"))))
		stillManaged()

		// The owner's signed removal is what removes it.
		assign("team-site", "team config", web)
		Eventually(content).WithTimeout(20 * time.Second).Should(Equal("team config"))
		code, out, errOut = runOrch("assignments", "rm", "team-site", "--key", web.seedFile, "--server", url)
		Expect(code).To(Equal(0), out+errOut)
		Eventually(auditOf("adv4-1", "team-site")).WithTimeout(20 * time.Second).Should(ContainElement(ContainSubstring(`"decision":"removed"`)))
		Expect(os.WriteFile(filepath.Join(target, "team-site"), []byte("mine now"), 0o644)).To(Succeed())
		Consistently(content).WithTimeout(3 * time.Second).Should(Equal("mine now"))
		code, out, _ = runOrch("assignments", "list", "--server", url)
		Expect(code).To(Equal(0))
		Expect(out).To(MatchRegexp(`team-site\s+\d+\s+\(removed `))
	})

	It("finding 13: a host whose facts leave the signer's hosts scope stops running the assignment, and resumes when they return", func() {
		canary := fmt.Sprintf("CANARY-13-OUT-OF-SCOPE-%d", time.Now().UnixNano())
		facts := factsFile("facts.yaml", "web")
		startAgent("adv13-1", facts)
		content := contentOf("scoped")
		assign("scoped", canary, web)
		Eventually(content).WithTimeout(20 * time.Second).Should(Equal(canary))

		// The host becomes a database server: web's scope is role=web.
		factsFile("facts.yaml", "db")
		Eventually(func() any {
			nodes, _, err := jsstore.ReadRegistry(context.Background(), js)
			if err != nil || len(nodes) != 1 {
				return nil
			}
			return nodes[0].Facts["role"]
		}).WithTimeout(20 * time.Second).Should(Equal("db"))
		Expect(os.Remove(filepath.Join(target, "scoped"))).To(Succeed())
		Consistently(content).WithTimeout(5 * time.Second).ShouldNot(ContainSubstring(canary))
		Expect(auditOf("adv13-1", "scoped")()).To(ContainElement(And(
			ContainSubstring(`"decision":"forbidden"`), ContainSubstring("by hosts"), ContainSubstring(`"rule":"hosts`))))
		Eventually(func() string {
			_, out, _ := runOrch("status", "--assignment", "scoped", "--server", url)
			return out
		}).WithTimeout(20 * time.Second).Should(And(ContainSubstring("refused: adv13-1"), ContainSubstring("denied host")))

		// Back in scope: it runs again.
		factsFile("facts.yaml", "web")
		Eventually(content).WithTimeout(20 * time.Second).Should(Equal(canary))
	})
})
