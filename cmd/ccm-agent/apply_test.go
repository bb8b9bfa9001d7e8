package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("ccm-agent apply", func() {
	var dir, site string

	// write puts a manifest (DIR replaced by the temp dir) at site.
	write := func(doc string) {
		GinkgoHelper()
		Expect(os.WriteFile(site, []byte(strings.ReplaceAll(doc, "DIR", dir)), 0o644)).To(Succeed())
	}

	BeforeEach(func() {
		dir = GinkgoT().TempDir()
		site = filepath.Join(dir, "site.yaml")
	})

	const subscribed = `
data: {v: "1"}
ccm:
  pre_message: "applying {{ lookup('data.v') }}"
  post_message: "all good"
  resources:
    - file:
        - defaults: {owner: root, group: root, mode: "0644"}
        - DIR/conf: {content: "{{ lookup('data.v') }}", alias: conf}
    - exec:
        - refresh:
            command: "/bin/sh -c 'echo ran >> DIR/refreshes'"
            refreshonly: true
            subscribe: [file#conf]
`

	It("prints the pre message, one line per resource, the post message and a summary", func() {
		write(subscribed)
		code, out, errOut := agent("apply", site, "--no-report")
		Expect(code).To(Equal(0), errOut)
		Expect(out).To(HavePrefix("\napplying 1\n"))
		lines := strings.Split(strings.TrimSpace(out), "\n")
		Expect(lines).To(HaveLen(6), out)
		Expect(lines[0]).To(Equal("applying 1"))
		Expect(lines[1]).To(Equal(" INFO  Executing manifest manifest=" + site + " resources=2"))
		Expect(lines[2]).To(MatchRegexp(`^ WARN  file#conf \(alias\) changed ensure=present runtime=\d+m?s provider=posix$`), "CCM's line: the alias, as CCM names it")
		Expect(lines[3]).To(MatchRegexp(`^ WARN  exec#refresh refreshed ensure=present runtime=\d+m?s provider=posix$`))
		Expect(lines[4]).To(Equal("all good"))
		Expect(lines[5]).To(MatchRegexp(`^2 resources: 0 stable, 2 changed, 0 failed, 0 skipped, 1 refreshed in \d+ms$`))
		Expect(os.ReadFile(filepath.Join(dir, "refreshes"))).To(Equal([]byte("ran\n")))

		code, out, _ = agent("apply", site)
		Expect(code).To(Equal(0))
		Expect(out).To(ContainSubstring("exec#refresh stable"))
		Expect(out).To(MatchRegexp(`2 resources: 2 stable, 0 changed, 0 failed, 0 skipped, 0 refreshed in \d+ms`))
		Expect(os.ReadFile(filepath.Join(dir, "refreshes"))).To(Equal([]byte("ran\n")), "no refresh without a change")
	})

	It("exits 5 under noop with --detailed-exit-codes when something would change, saying what would refresh, and changes nothing", func() {
		write(subscribed)
		code, _, _ := agent("apply", site)
		Expect(code).To(Equal(0))
		data := filepath.Join(dir, "data.yaml")
		Expect(os.WriteFile(data, []byte("v: \"2\"\n"), 0o644)).To(Succeed())

		code, out, _ := agent("apply", site, "--noop", "--data", data, "--detailed-exit-codes")
		Expect(code).To(Equal(5))
		Expect(out).To(MatchRegexp(`(?m)^ WARN  file#conf \(alias\) changed ensure=present runtime=\d+m?s provider=posix noop=Would have `))
		Expect(out).To(ContainSubstring(" provider=posix noop=Would have executed via subscribe (would refresh: file#conf would change)\n"))
		Expect(out).To(ContainSubstring(" WARN  exec#refresh refreshed ensure=present runtime="))
		Expect(out).To(MatchRegexp(`2 resources: 0 stable, 2 would change, 0 failed, 0 skipped, 1 would refresh in \d+ms`))
		Expect(os.ReadFile(filepath.Join(dir, "conf"))).To(Equal([]byte("1")))
		Expect(os.ReadFile(filepath.Join(dir, "refreshes"))).To(Equal([]byte("ran\n")))
	})

	It("exits 2 with --detailed-exit-codes when a resource failed, skips what required it and leaves out the post message", func() {
		write(`
ccm:
  post_message: "all good"
  resources:
    - exec:
        - /bin/false: {}
        - "/bin/touch DIR/after": {require: [exec#/bin/false]}
`)
		code, out, _ := agent("apply", site, "--detailed-exit-codes")
		Expect(code).To(Equal(2))
		Expect(out).To(ContainSubstring(" ERROR exec#/bin/false failed ensure=present runtime="))
		Expect(out).To(ContainSubstring(" ERROR exec#/bin/touch " + dir + "/after skipped due to unmet requirement ensure=present runtime=0s provider= unmet=exec#/bin/false\n"))
		Expect(out).ToNot(ContainSubstring("all good"))
		Expect(out).To(MatchRegexp(`2 resources: 0 stable, 0 changed, 1 failed, 1 skipped, 0 refreshed in \d+ms`))
		Expect(filepath.Join(dir, "after")).ToNot(BeAnExistingFile())
	})

	It("says why fail_on_error left resources unapplied", func() {
		write(`
ccm:
  fail_on_error: true
  resources:
    - exec: [{/bin/false: {}}, {"/bin/touch DIR/after": {}}]
`)
		code, out, _ := agent("apply", site, "--detailed-exit-codes")
		Expect(code).To(Equal(2))
		Expect(out).To(ContainSubstring(" WARN  Terminating manifest execution due to failed resource\n WARN  exec#/bin/touch " + dir + "/after not applied: fail_on_error is set and exec#/bin/false failed\n"))
	})

	It("prints every event and the summary with --json", func() {
		write(subscribed)
		code, out, _ := agent("apply", site, "--json")
		Expect(code).To(Equal(0))
		var doc struct {
			Events  []map[string]any `json:"events"`
			Summary map[string]any   `json:"summary"`
		}
		Expect(json.Unmarshal([]byte(out), &doc)).To(Succeed(), out)
		Expect(doc.Events).To(HaveLen(2))
		Expect(doc.Events[0]).To(HaveKeyWithValue("protocol", "io.choria.ccm.v1.transaction.event"))
		Expect(doc.Events[1]).To(HaveKeyWithValue("refreshed", true))
		Expect(doc.Events[1]).To(HaveKeyWithValue("unmet_requirements", []any{}))
		Expect(doc.Summary).To(HaveKeyWithValue("total", 2.0))
		Expect(doc.Summary).To(HaveKeyWithValue("changed", 2.0))
		Expect(doc.Summary).To(HaveKeyWithValue("refreshed", 1.0))
		Expect(doc.Summary).To(HaveKey("duration"))
	})

	It("renders the manifest after data resolution with --render, from facts and --data, applying nothing", func() {
		write(`
data: {motd: base, port: 80}
hierarchy:
  order: ["role:{{ lookup('facts.role', '') }}"]
  merge: deep
overrides:
  "role:web": {motd: web}
ccm:
  resources:
    - file:
        - DIR/motd: {content: "{{ lookup('data.motd') }}:{{ lookup('data.port') }}", owner: root, group: root, mode: "0644"}
`)
		data := filepath.Join(dir, "data.json")
		Expect(os.WriteFile(data, []byte(`{"port": 8080}`), 0o644)).To(Succeed())
		code, out, errOut := agent("apply", site, "--render", "--fact", "role=web", "--data", data)
		Expect(code).To(Equal(0), errOut)
		Expect(out).To(ContainSubstring("motd: web\n"))
		Expect(out).To(ContainSubstring("port: 8080\n"))
		Expect(out).To(ContainSubstring("  - file:\n"))
		Expect(out).To(ContainSubstring("content: web:8080\n"))
		Expect(filepath.Join(dir, "motd")).ToNot(BeAnExistingFile())
	})

	DescribeTable("refuses invalid manifests with one line, exit 1, changing nothing",
		func(doc, problem string) {
			write(doc)
			code, out, errOut := agent("apply", site)
			Expect(code).To(Equal(1))
			Expect(out).To(BeEmpty())
			Expect(strings.Count(strings.TrimSpace(errOut), "\n")).To(Equal(0), errOut)
			Expect(errOut).To(ContainSubstring(problem))
			Expect(filepath.Join(dir, "first")).ToNot(BeAnExistingFile())
		},
		Entry("unknown property", `
ccm:
  resources:
    - exec: [{"/bin/touch DIR/first": {}}]
    - file: [{/etc/motd: {colour: red}}]
`, `resources[1] file#/etc/motd: unknown property "colour"`),
		Entry("missing require reference", `
ccm:
  resources:
    - exec: [{"/bin/touch DIR/first": {}}]
    - service: [{nginx: {require: [package#nginx]}}]
`, `resources[1] service#nginx: require package#nginx: no resource in the manifest is package#nginx`),
		Entry("a property the type refuses", `
ccm:
  resources:
    - exec: [{"/bin/touch DIR/first": {}}]
    - file: [{DIR/x: {content: x, owner: root, group: root, mode: "0888"}}]
`, `property mode: "0888"`),
		Entry("duplicate resource", `
ccm:
  resources:
    - exec: [{"/bin/touch DIR/first": {}}, {"/bin/touch DIR/first": {}}]
`, `is declared twice`),
	)

	It("fails clearly on a missing manifest, and answers --json with an error document", func() {
		code, _, errOut := agent("apply", filepath.Join(dir, "none.yaml"))
		Expect(code).To(Equal(1))
		Expect(errOut).To(ContainSubstring("no such file"))

		write("ccm: {resources: [{pakage: []}]}\n")
		code, out, _ := agent("apply", site, "--json")
		Expect(code).To(Equal(1))
		var doc map[string]string
		Expect(json.Unmarshal([]byte(out), &doc)).To(Succeed())
		Expect(doc["error"]).To(ContainSubstring(`unknown resource type "pakage"`))
	})

	It("applies the local example with a relative source, then finds it stable", func() {
		example, err := filepath.Abs("../../examples/local-demo.yaml")
		Expect(err).ToNot(HaveOccurred())
		base := filepath.Join(dir, "demo")
		data := filepath.Join(dir, "data.yaml")
		Expect(os.WriteFile(data, []byte("base: "+base+"\n"), 0o644)).To(Succeed())

		code, out, errOut := agent("apply", example, "--data", data, "--fact", "os=debian")
		Expect(code).To(Equal(0), out+errOut)
		Expect(out).To(HavePrefix("\nApplying the demo below "+base+"\n INFO  Executing manifest manifest="+example+" resources=5\n"), "CCM's pre_message and Executing line")
		Expect(out).To(ContainSubstring("Done: hello from debian\n"))
		Expect(os.ReadFile(filepath.Join(base, "greeting"))).To(Equal([]byte("hello from debian\n")))
		Expect(os.ReadFile(filepath.Join(base, "motd"))).To(Equal([]byte("This host is managed by CCM Fleet.\n")))
		Expect(filepath.Join(base, "changes.log")).To(BeAnExistingFile())
		Expect(out).To(MatchRegexp(`5 resources: 0 stable, 4 changed, 0 failed, 1 skipped, 1 refreshed in \d+ms`))

		code, out, _ = agent("apply", example, "--data", data, "--fact", "os=debian")
		Expect(code).To(Equal(0))
		Expect(out).To(MatchRegexp(`5 resources: 4 stable, 0 changed, 0 failed, 1 skipped, 0 refreshed in \d+ms`))
	})
})

var _ = Describe("ccm-agent apply with health checks", func() {
	It("runs them after the resource, fails on CRITICAL, and --monitor-only runs only them", func() {
		dir := GinkgoT().TempDir()
		site := filepath.Join(dir, "site.yaml")
		write := func(exit int) {
			doc := `ccm:
  resources:
    - file:
        - ` + dir + `/conf:
            content: "x"
            owner: root
            group: root
            mode: "0644"
            health_checks:
              - name: web
                command: "/bin/sh -c 'echo service says hi; exit ` + string(rune('0'+exit)) + `'"
`
			Expect(os.WriteFile(site, []byte(doc), 0o644)).To(Succeed())
		}
		write(0)
		code, out, errOut := agent("apply", site, "--monitor-only")
		Expect(code).To(Equal(0), errOut)
		Expect(out).To(ContainSubstring("  health web: OK service says hi\n"))
		Expect(filepath.Join(dir, "conf")).ToNot(BeAnExistingFile(), "monitor only changes nothing")

		write(2)
		code, out, _ = agent("apply", site, "--detailed-exit-codes")
		Expect(code).To(Equal(2))
		Expect(out).To(ContainSubstring("  health web: CRITICAL service says hi\n"))
		Expect(filepath.Join(dir, "conf")).To(BeAnExistingFile(), "the resource applied before its check")

		code, out, _ = agent("apply", site, "--json", "--monitor-only", "--detailed-exit-codes")
		Expect(code).To(Equal(2))
		var rep struct {
			Events []struct {
				Changed      bool
				HealthChecks []map[string]any `json:"health_checks"`
			}
		}
		Expect(json.Unmarshal([]byte(out), &rep)).To(Succeed())
		Expect(rep.Events).To(HaveLen(1))
		Expect(rep.Events[0].Changed).To(BeFalse())
		Expect(rep.Events[0].HealthChecks).To(ConsistOf(And(HaveKeyWithValue("status", "CRITICAL"), HaveKeyWithValue("code", BeNumerically("==", 2)),
			HaveKeyWithValue("message", "service says hi"), HaveKeyWithValue("name", "web"))))
	})
})

var _ = Describe("ccm-agent ensure --check (CCM's health check flags)", func() {
	It("runs the checks after the resource, CRITICAL failing it, and refuses --check-tries alone", func() {
		dir := GinkgoT().TempDir()
		file := filepath.Join(dir, "conf")
		code, out, errOut := agent("ensure", "file", file, "--content", "x", "--owner", "root", "--group", "root", "--mode", "0644",
			"--check", "/bin/sh -c 'echo up'", "--check", "/bin/sh -c 'echo down; exit 2'", "--check-tries", "2", "--check-sleep", "10ms")
		Expect(code).To(Equal(2), errOut)
		Expect(out).To(ContainSubstring("  health /bin/sh -c 'echo up': OK up\n"))
		Expect(out).To(ContainSubstring("  health /bin/sh -c 'echo down; exit 2': CRITICAL down\n"))
		Expect(file).To(BeAnExistingFile())

		code, out, _ = agent("ensure", "file", file, "--content", "x", "--owner", "root", "--group", "root", "--mode", "0644", "--check", "/bin/true", "--json")
		Expect(code).To(Equal(0))
		var resp struct {
			State struct {
				HealthChecks []map[string]any `json:"health_checks"`
				Status       map[string]any
			}
		}
		Expect(json.Unmarshal([]byte(out), &resp)).To(Succeed(), out)
		Expect(resp.State.HealthChecks).To(ConsistOf(HaveKeyWithValue("status", "OK")))
		Expect(resp.State.Status).To(HaveKeyWithValue("stable", true))

		code, _, errOut = agent("ensure", "file", filepath.Join(dir, "other"), "--content", "x", "--owner", "root", "--group", "root", "--mode", "0644", "--check-tries", "3")
		Expect(code).To(Equal(1))
		Expect(errOut).To(ContainSubstring("--check-tries and --check-sleep need a --check"))
		Expect(filepath.Join(dir, "other")).ToNot(BeAnExistingFile())
	})
})
