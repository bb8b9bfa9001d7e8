package integration_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/agent"
)

var _ = Describe("Signer scopes across a fleet", Ordered, func() {
	var (
		f        *fleet
		dir      string
		web, ops signingKey
	)

	BeforeAll(func() {
		dir = GinkgoT().TempDir()
		web, ops = newSigningKey(dir, "web"), newSigningKey(dir, "ops")
		policy := policyFile(dir,
			signerEntry("ops", ops.pub, "exec, file"),
			signerEntry("web", web.pub, "exec, file",
				"hosts: [role=web]",
				"exec: {commands: [\"/usr/bin/touch *\"]}",
				"file: {paths: [\""+dir+"/\"]}",
			))
		f = startFleetWith(fleetOptions{history: true, config: agent.Config{Policy: policy}}, 6, "scope", nil, "role=web,db")
	})

	// dbHosts are the identities the vary gives role=db.
	dbHosts := func() []string {
		var out []string
		for i := range 6 {
			if facts := agent.SimulatedFacts(i, "scope", nil, f.vary); facts["role"] == "db" {
				out = append(out, facts["identity"].(string))
			}
		}
		return out
	}

	It("answers a signer scoped to role=web sending to --where role=db forbidden from every db host, changing nothing", func() {
		target := filepath.Join(dir, "scoped-{{ lookup('facts.identity') }}")
		code, doc := f.orchJSON("ensure", "exec", "/usr/bin/touch "+target, "--where", "role=db", "--key", web.seedFile)
		Expect(code).To(Equal(2), "%v", doc)
		b, _ := json.Marshal(doc)
		GinkgoWriter.Println(string(b))
		hosts := doc["hosts"].([]any)
		Expect(hosts).To(HaveLen(3))
		for _, h := range hosts {
			h := h.(map[string]any)
			Expect(dbHosts()).To(ContainElement(h["identity"]))
			Expect(h["error"]).To(HaveKeyWithValue("code", "forbidden"))
			Expect(h["error"]).To(HaveKeyWithValue("message", ContainSubstring(`by hosts ["role=web"]: this host's facts do not match it`)))
		}
		Expect(filepath.Glob(filepath.Join(dir, "scoped-*"))).To(BeEmpty())

		// Each db agent's audit log names the rule and the host.
		for _, id := range dbHosts() {
			logs, err := filepath.Glob(filepath.Join(f.stateDir, "*"+id+"*", agent.AuditFileName))
			Expect(err).ToNot(HaveOccurred())
			Expect(logs).To(HaveLen(1), "audit log of %s", id)
			data, err := os.ReadFile(logs[0])
			Expect(err).ToNot(HaveOccurred())
			var found bool
			for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
				var rec agent.AuditRecord
				Expect(json.Unmarshal([]byte(line), &rec)).To(Succeed())
				if rec.Decision == "forbidden" {
					found = true
					Expect(rec.Rule).To(Equal(`hosts ["role=web"]`))
					Expect(rec.Value).To(Equal(id))
					Expect(rec.Signer.Name).To(Equal("web"))
				}
			}
			Expect(found).To(BeTrue(), "a forbidden line in %s", logs[0])
		}
	})

	It("runs the same signer's request on the web hosts, and ops' on the db hosts", func() {
		target := filepath.Join(dir, "web-{{ lookup('facts.identity') }}")
		code, doc := f.orchJSON("ensure", "exec", "/usr/bin/touch "+target, "--where", "role=web", "--key", web.seedFile)
		Expect(code).To(Equal(0), "%v", doc)
		Expect(filepath.Glob(filepath.Join(dir, "web-*"))).To(HaveLen(3))

		code, doc = f.orchJSON("ensure", "exec", "/usr/bin/touch "+filepath.Join(dir, "ops-{{ lookup('facts.identity') }}"), "--where", "role=db", "--key", ops.seedFile)
		Expect(code).To(Equal(0), "%v", doc)
		Expect(filepath.Glob(filepath.Join(dir, "ops-*"))).To(HaveLen(3))
	})

	It("refuses a command outside the signer's exec scope on its own hosts, naming the rule", func() {
		code, out, _ := f.orch("ensure", "exec", "/bin/sh -c 'touch "+filepath.Join(dir, "shell-canary")+"'", "--where", "role=web", "--key", web.seedFile)
		Expect(code).To(Equal(2), out)
		Expect(out).To(ContainSubstring("forbidden"))
		Expect(out).To(ContainSubstring("exec.commands (no pattern matches: default deny)"))
		Expect(filepath.Join(dir, "shell-canary")).ToNot(BeAnExistingFile())
	})
})
