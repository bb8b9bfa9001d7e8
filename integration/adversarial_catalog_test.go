package integration_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/agent"
	"github.com/ccm-fleet/ccm/protocol"
)

// Round 3: what a resource reads is judged like what it writes. Each spec
// plants a root-only canary file and asks, with a scoped or a noop_only
// key, for a resource that would read it; the canary must appear in no
// reply, no history record and no written file, and ccm-orch policy check
// must say denied as the agent does.
var _ = Describe("Adversarial: read scopes (round 3)", Ordered, func() {
	const canary = "catalog-canary-3d41b8e2"
	var (
		f                            *fleet
		dir, policy, factsFile, host string
		web, audit, shipped          signingKey
		secret, tree, www            string
		seq                          int
	)

	BeforeAll(func() {
		dir = GinkgoT().TempDir()
		web, audit, shipped = newSigningKey(dir, "web"), newSigningKey(dir, "audit"), newSigningKey(dir, "shipped")
		// Root-only: a directory only root enters, a file only root reads.
		root := filepath.Join(dir, "root")
		tree = filepath.Join(root, "tree")
		Expect(os.MkdirAll(tree, 0o700)).To(Succeed())
		Expect(os.Chmod(root, 0o700)).To(Succeed())
		secret = filepath.Join(root, "secret")
		Expect(os.WriteFile(secret, []byte(canary+"\n"), 0o600)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(tree, "app.conf"), []byte(canary+"\n"), 0o600)).To(Succeed())
		www = filepath.Join(dir, "www")
		Expect(os.MkdirAll(www, 0o755)).To(Succeed())

		policy = policyFile(dir,
			signerEntry("web", web.pub, "file, scaffold", "file: {paths: [\""+www+"/\"]}"),
			// The compliance-scanner shape as it was shipped: noop_only,
			// no file scope.
			signerEntry("audit", audit.pub, "file, package, service", "noop_only: true"),
			// The compliance-scanner shape as dist/policy.yaml ships it now.
			signerEntry("shipped", shipped.pub, "file, package, service", "noop_only: true",
				"file: {read_paths: [/etc/]}",
				"deny: {file: {read_paths: [/etc/shadow, /etc/gshadow, /etc/ssl/private/]}}"),
		)
		f = startFleetWith(fleetOptions{history: true, config: agent.Config{Policy: policy}}, 1, "catalog", map[string]any{"role": "web"})
		for id, facts := range f.factsOf() {
			host = id
			b, err := json.Marshal(facts)
			Expect(err).ToNot(HaveOccurred())
			factsFile = filepath.Join(dir, "facts.json")
			Expect(os.WriteFile(factsFile, b, 0o644)).To(Succeed())
		}
	})

	// refusedEverywhere runs ccm-orch ensure (args after "ensure"), then
	// requires: forbidden from the host, the canary in neither the result
	// nor the history record, nothing at written, and policy check of the
	// same request by the same signer denied.
	refusedEverywhere := func(signer string, key signingKey, typ string, props map[string]any, noop bool, written, rule string, secrets ...string) {
		GinkgoHelper()
		secrets = append(secrets, canary)
		args := []string{"ensure", typ, props["name"].(string), "--key", key.seedFile, "--diff"}
		for k, v := range props {
			if k != "name" {
				args = append(args, "--"+k, fmt.Sprint(v))
			}
		}
		if noop {
			args = append(args, "--noop")
		}
		code, out, errOut := f.orch(append(args, "--json")...)
		for _, s := range secrets {
			Expect(out + errOut).ToNot(ContainSubstring(s))
		}
		Expect(code).To(Equal(int(protocol.ExitFailed)), "stdout %s\nstderr %s", out, errOut)
		var doc map[string]any
		Expect(json.Unmarshal([]byte(out), &doc)).To(Succeed(), out)
		hosts := doc["hosts"].([]any)
		Expect(hosts).To(HaveLen(1))
		h := hosts[0].(map[string]any)
		Expect(h["error"]).To(HaveKeyWithValue("code", "forbidden"), out)
		Expect(h["error"]).To(HaveKeyWithValue("message", ContainSubstring(rule)), out)
		Expect(written).ToNot(BeAnExistingFile())

		id, _ := doc["request_id"].(string)
		Expect(id).ToNot(BeEmpty(), out)
		var shown string
		Eventually(func() string {
			_, shown, _ = f.orch("history", "show", id, "--json")
			return shown
		}).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(ContainSubstring("forbidden"))
		for _, s := range secrets {
			Expect(shown).ToNot(ContainSubstring(s))
		}

		// The same request, judged offline.
		seq++
		er, err := protocol.NewEnsureRequest(typ, props)
		Expect(err).ToNot(HaveOccurred())
		req := protocol.NewFleetRequest(fmt.Sprintf("catalog-check-%d", seq), time.Now(), time.Minute)
		req.Ensure, req.Noop = er, noop
		body, err := json.Marshal(req)
		Expect(err).ToNot(HaveOccurred())
		reqFile := filepath.Join(dir, fmt.Sprintf("request-%d.json", seq))
		Expect(os.WriteFile(reqFile, body, 0o644)).To(Succeed())
		code, out, errOut = f.orch("policy", "check", policy, "--key", signer, "--request", reqFile, "--facts", factsFile)
		Expect(code).To(Equal(int(protocol.ExitFailed)), "policy check says allowed:\n%s%s", out, errOut)
		Expect(out).To(ContainSubstring("denied"))
		Expect(out).To(ContainSubstring(rule))
		for _, s := range secrets {
			Expect(out + errOut).ToNot(ContainSubstring(s))
		}
	}

	It("refuses a scoped signer's file and scaffold source outside its paths, real or noop (finding 1)", func() {
		Expect(host).ToNot(BeEmpty())
		file := func(name string) map[string]any {
			return map[string]any{"name": name, "source": secret, "owner": "root", "group": "root", "mode": "0644"}
		}
		refusedEverywhere("web", web, "file", file(filepath.Join(www, "f")), false, filepath.Join(www, "f"),
			"file.paths (no prefix holds "+secret+": default deny)")
		refusedEverywhere("web", web, "file", file(filepath.Join(www, "g")), true, filepath.Join(www, "g"),
			"file.paths (no prefix holds "+secret+": default deny)")
		refusedEverywhere("web", web, "scaffold", map[string]any{"name": filepath.Join(www, "site"), "source": tree}, false, filepath.Join(www, "site"),
			"file.paths (no prefix holds "+tree+": default deny)")
		// A link inside the allowed tree leads out of it: judged where it leads.
		link := filepath.Join(www, "innocent")
		Expect(os.Symlink(secret, link)).To(Succeed())
		refusedEverywhere("web", web, "file", map[string]any{"name": filepath.Join(www, "h"), "source": link, "owner": "root", "group": "root", "mode": "0644"}, false, filepath.Join(www, "h"),
			"file.paths (no prefix holds "+secret+": default deny)")
	})

	It("refuses a noop_only signer's reads of root-only files (finding 2)", func() {
		refusedEverywhere("audit", audit, "file", map[string]any{"name": filepath.Join(www, "n"), "source": secret, "owner": "root", "group": "root", "mode": "0644"}, true, filepath.Join(www, "n"),
			"file.read_paths (noop_only signer: reads must be listed)")
		// The shipped shape reads /etc/ only, and never its secrets.
		refusedEverywhere("shipped", shipped, "file", map[string]any{"name": "/etc/ccm-catalog-absent", "source": secret, "owner": "root", "group": "root", "mode": "0644"}, true, "/etc/ccm-catalog-absent",
			"file.read_paths (no prefix holds "+secret+": default deny)")
		var shadow []string
		if data, err := os.ReadFile("/etc/shadow"); err == nil {
			for _, line := range strings.Split(string(data), "\n") {
				if _, hash, ok := strings.Cut(line, ":"); ok && len(hash) > 20 {
					shadow = append(shadow, strings.SplitN(hash, ":", 2)[0])
				}
			}
		}
		refusedEverywhere("shipped", shipped, "file", map[string]any{"name": "/etc/shadow", "content": "x\n", "owner": "root", "group": "shadow", "mode": "0640"}, true, "/etc/shadow-not-written",
			`deny.file.read_paths[0] "/etc/shadow"`, shadow...)
	})
})
