package integration_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/agent"
	"github.com/ccm-fleet/ccm/protocol"
)

// Round 4 refused every goss rule from the fleet: the resource catalog
// could not declare what a rule touches, so no scope could judge it.
// Round 6 (issue 41): the catalog declares what file, command, http,
// package, service, port and addr rules touch, and the signer's scopes
// judge each object before anything runs; a key it cannot declare
// (gossfile, kernel-param, matching, ...) stays refused, by name.
var _ = Describe("Adversarial: goss health checks from the fleet (rounds 4 and 6)", Ordered, func() {
	const canary = "goss-canary-5e07c1d9"
	var (
		f                                *fleet
		dir, www, secret, marker, policy string
		factsFile                        string
		web                              signingKey
		srv                              *httptest.Server
		mu                               sync.Mutex
		seen                             []string
		seq                              int
	)
	requested := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}

	BeforeAll(func() {
		dir = GinkgoT().TempDir()
		secret = filepath.Join(dir, "secret")
		Expect(os.WriteFile(secret, []byte(canary+"\n"), 0o600)).To(Succeed())
		marker = filepath.Join(dir, "goss-ran")
		www = filepath.Join(dir, "www")
		Expect(os.MkdirAll(www, 0o755)).To(Succeed())
		srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			seen = append(seen, r.URL.Path)
			mu.Unlock()
			_, _ = w.Write([]byte("ok\n"))
		}))
		DeferCleanup(srv.Close)
		web = newSigningKey(dir, "web")
		policy = policyFile(dir, signerEntry("web", web.pub, "file, exec", "shell: true",
			"file: {paths: [\""+www+"/\"]}",
			"exec: {commands: ['/bin/sh -c \"test -s "+www+"/motd\"', '/bin/sh -c \"touch "+marker+"\"']}",
			"net: {urls: [\""+srv.URL+"/health\"]}"))
		f = startFleetWith(fleetOptions{history: true, config: agent.Config{Policy: policy}}, 2, "goss", nil)
		for _, facts := range f.factsOf() {
			b, err := json.Marshal(facts)
			Expect(err).ToNot(HaveOccurred())
			factsFile = filepath.Join(dir, "facts.json")
			Expect(os.WriteFile(factsFile, b, 0o644)).To(Succeed())
		}
	})

	// manifest writes a manifest managing target, its health check the
	// goss rules given as YAML lines (indented for the rules' mapping).
	manifest := func(target, rules string) string {
		GinkgoHelper()
		seq++
		m := filepath.Join(dir, fmt.Sprintf("site-%d.yaml", seq))
		Expect(os.WriteFile(m, []byte(`ccm:
  resources:
    - file:
        - "`+target+`":
            content: "hello\n"
            owner: root
            group: root
            mode: "0644"
            health_checks:
              - name: site
                goss_rules:
`+rules), 0o644)).To(Succeed())
		return m
	}

	// refused applies m as web and requires: forbidden on every host with
	// message, no goss rule run (the canary command left no marker),
	// nothing applied, the canary nowhere, the history record saying
	// forbidden, and policy check of the same manifest denied with messages.
	refused := func(m, target string, messages ...string) {
		GinkgoHelper()
		code, out, errOut := f.orch("apply", m, "--key", web.seedFile, "--json")
		Expect(out + errOut).ToNot(ContainSubstring(canary))
		Expect(code).To(Equal(int(protocol.ExitFailed)), "stdout %s\nstderr %s", out, errOut)
		var doc map[string]any
		Expect(json.Unmarshal([]byte(out), &doc)).To(Succeed(), out)
		hosts := doc["hosts"].([]any)
		Expect(hosts).To(HaveLen(2))
		for _, h := range hosts {
			Expect(h).To(HaveKeyWithValue("error", HaveKeyWithValue("code", "forbidden")), out)
			for _, message := range messages {
				Expect(h).To(HaveKeyWithValue("error", HaveKeyWithValue("message", ContainSubstring(message))), out)
			}
		}
		Expect(marker).ToNot(BeAnExistingFile(), "no goss rule ran")
		Expect(target).ToNot(BeAnExistingFile(), "nothing was applied")

		id, _ := doc["request_id"].(string)
		Expect(id).ToNot(BeEmpty(), out)
		var shown string
		Eventually(func() string {
			_, shown, _ = f.orch("history", "show", id, "--json")
			return shown
		}).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(ContainSubstring("forbidden"))
		Expect(shown).ToNot(ContainSubstring(canary))

		code, out, errOut = f.orch("policy", "check", policy, "--key", "web", "--manifest", m, "--facts", factsFile)
		Expect(code).To(Equal(int(protocol.ExitFailed)), "policy check says allowed:\n%s%s", out, errOut)
		for _, message := range messages {
			Expect(out + errOut).To(ContainSubstring(message))
		}
		Expect(out + errOut).ToNot(ContainSubstring(canary))
	}

	It("runs an in-scope goss check (a file, a command and a URL the signer may use) and reports it", func() {
		target := filepath.Join(www, "motd")
		m := manifest(target, `                  file:
                    "`+target+`":
                      exists: true
                      contents: ["hello"]
                  command:
                    "test -s `+target+`":
                      exit-status: 0
                  http:
                    "`+srv.URL+`/health":
                      status: 200
                      no-follow-redirects: true
`)
		code, out, errOut := f.orch("policy", "check", policy, "--key", "web", "--manifest", m, "--facts", factsFile)
		Expect(code).To(Equal(0), "%s%s", out, errOut)
		Expect(out).To(ContainSubstring(`allowed health_checks[0].goss_rules.file (read) "` + target + `" by file.paths[0]`))
		Expect(out).To(ContainSubstring(`allowed health_checks[0].goss_rules.http "` + srv.URL + `/health" by net.urls[0]`))

		code, out, errOut = f.orch("apply", m, "--key", web.seedFile, "--json")
		Expect(code).To(Equal(0), "stdout %s\nstderr %s", out, errOut)
		var doc map[string]any
		Expect(json.Unmarshal([]byte(out), &doc)).To(Succeed(), out)
		b, err := json.Marshal(doc["hosts"])
		Expect(err).ToNot(HaveOccurred())
		GinkgoWriter.Println(string(b))
		Expect(string(b)).To(ContainSubstring(`"status":"OK"`))
		Expect(string(b)).To(ContainSubstring(`Count: 4, Failed: 0`))
		Expect(target).To(BeAnExistingFile())
		Expect(requested()).To(ContainElement("/health"))
	})

	It("refuses a goss rule reading a file outside the signer's paths before any rule runs, naming the file and the scope", func() {
		target := filepath.Join(www, "motd-file")
		// The command is in the signer's scope: that it left no marker
		// shows that the rules are judged as a whole before any runs.
		refused(manifest(target, `                  command:
                    "touch `+marker+`":
                      exit-status: 0
                  file:
                    "`+secret+`":
                      contents: ["nothing like it"]
`), target, `denied health_checks[0].goss_rules.file (read) "`+secret+`" by file.paths (no prefix holds `+secret+`: default deny)`)
	})

	It("refuses a goss command outside the signer's exec scope before any rule runs, naming the command and the scope", func() {
		target := filepath.Join(www, "motd-command")
		refused(manifest(target, `                  command:
                    "touch `+marker+` && true":
                      exit-status: 0
`), target, `denied health_checks[0].goss_rules.command "sh -c 'touch `+marker+` && true'`, `by exec.commands (no pattern matches: default deny)`)
	})

	It("refuses a goss URL outside the signer's net.urls before any rule runs: nothing is requested", func() {
		target := filepath.Join(www, "motd-url")
		before := len(requested())
		refused(manifest(target, `                  command:
                    "touch `+marker+`":
                      exit-status: 0
                  http:
                    "`+srv.URL+`/internal/console":
                      status: 200
                      no-follow-redirects: true
`), target, `denied health_checks[0].goss_rules.http "`+srv.URL+`/internal/console" by net.urls (no prefix holds it: default deny)`)
		Expect(requested()).To(HaveLen(before), "the URL was not requested")
	})

	It("refuses, by name, a goss key the catalog cannot declare, before any rule runs", func() {
		target := filepath.Join(www, "motd-kernel")
		refused(manifest(target, `                  command:
                    "touch `+marker+`":
                      exit-status: 0
                  kernel-param:
                    kernel.pid_max:
                      value: "1"
`), target, `property health_checks[0].goss_rules: key "kernel-param": the resource catalog cannot declare what it touches, so no scope could judge it`)
	})
})
