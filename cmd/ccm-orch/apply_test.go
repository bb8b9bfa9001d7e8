package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/orchestrator/fleettest"
)

// writeManifest writes doc as site.yaml in a new directory with files, and
// returns its path.
func writeManifest(doc string, files map[string]string) string {
	dir := GinkgoT().TempDir()
	for name, content := range files {
		Expect(os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644)).To(Succeed())
	}
	path := filepath.Join(dir, "site.yaml")
	Expect(os.WriteFile(path, []byte(doc), 0o644)).To(Succeed())
	return path
}

var _ = Describe("ccm-orch apply and audit", func() {
	var (
		fl       *fleettest.Fleet
		server   []string
		target   string
		site     string
		dirRef   string
		issueRef string
	)
	BeforeEach(func() {
		fl = fleettest.Start(GinkgoT(), fleetSize, nil, "os=debian,rhel")
		server = []string{"--server", fl.URL()}
		target = GinkgoT().TempDir()
		dirRef = "file#" + target + "/{{ lookup('facts.identity') }}"
		issueRef = dirRef + "/issue"
		site = writeManifest(`
data:
  motd: managed
ccm:
  resources:
    - file:
        - defaults:
            owner: root
            group: root
        - "`+target+`/{{ lookup('facts.identity') }}":
            ensure: directory
            mode: "0755"
        - "`+target+`/{{ lookup('facts.identity') }}/issue":
            source: files/issue
            mode: "0644"
`, map[string]string{"files/issue": "bundled issue\n"})
	})
	run := func(args ...string) (int, string, string) { return orch(append(args, server...)...) }

	It("applies, audits clean, reports the drifted hosts per resource with exit 5, repairs", func() {
		code, out, errOut := run("apply", site)
		Expect(code).To(Equal(0), errOut)
		l := lines(out)
		Expect(l).To(HaveLen(3))
		Expect(l[0]).To(HavePrefix(fmt.Sprintf("%s: %d changed on sim-0001, sim-0002, ", dirRef, fleetSize)))
		Expect(l[0]).To(HaveSuffix(" and 4 more"))
		Expect(l[1]).To(HavePrefix(fmt.Sprintf("%s: %d changed on ", issueRef, fleetSize)))
		Expect(l[2]).To(HavePrefix("24 expected, 24 replied: 0 ok, 24 changed, 0 failed, 0 no reply; resources: 0 stable, 48 changed, 0 failed, 0 skipped; history: request record not kept: no history stream CCM_HISTORY"))
		for _, id := range fl.Identities {
			Expect(os.ReadFile(filepath.Join(target, id, "issue"))).To(Equal([]byte("bundled issue\n")))
		}

		code, out, _ = run("audit", site)
		Expect(code).To(Equal(0))
		Expect(lines(out)[:2]).To(Equal([]string{dirRef + ": 24 stable", issueRef + ": 24 stable"}))
		Expect(out).To(ContainSubstring("24 ok, 0 changed, 0 would change, 0 failed"))

		for _, id := range []string{"sim-0005", "sim-0018"} {
			Expect(os.WriteFile(filepath.Join(target, id, "issue"), []byte("edited\n"), 0o644)).To(Succeed())
		}
		for _, args := range [][]string{{"audit", site}, {"apply", site, "--noop"}} {
			code, out, _ = run(args...)
			Expect(code).To(Equal(5), "%v", args)
			l = lines(out)
			Expect(l[0]).To(Equal(dirRef + ": 24 stable"))
			Expect(l[1]).To(MatchRegexp("^" + regexp.QuoteMeta(issueRef) + `: 22 stable, 2 would change \(Would have created the file: .+\) on sim-0005, sim-0018$`))
			Expect(l[2]).To(ContainSubstring("22 ok, 0 changed, 2 would change, 0 failed, 0 no reply; resources: 46 stable, 0 changed, 2 would change"))
		}
		Expect(os.ReadFile(filepath.Join(target, "sim-0005", "issue"))).To(Equal([]byte("edited\n")))

		code, out, _ = run("apply", site, "--where", "os=rhel")
		Expect(code).To(Equal(0))
		Expect(lines(out)[1]).To(Equal(issueRef + ": 11 stable, 1 changed on sim-0018"))
		code, out, _ = run("audit", site, "--json")
		Expect(code).To(Equal(5), "sim-0005 is debian and still drifted")
		var doc map[string]any
		Expect(json.Unmarshal([]byte(out), &doc)).To(Succeed())
		Expect(doc).To(HaveKeyWithValue("exit_code", 5.0))
		Expect(doc["resources"]).To(HaveLen(2))
		Expect(doc["groups"]).To(ContainElement(And(
			HaveKeyWithValue("resource", issueRef),
			HaveKeyWithValue("outcome", "would_change"),
			HaveKeyWithValue("hosts", []any{"sim-0005"}),
		)))

		code, _, _ = run("apply", site)
		Expect(code).To(Equal(0))
		code, _, _ = run("audit", site)
		Expect(code).To(Equal(0))
	})

	It("lists a host that refused the request", func() {
		bad := writeManifest(`{"ccm": {"resources": [{"file": [{"`+target+`/x": {"content": "{{ lookup('environ.HOME') }}", "owner": "root", "group": "root", "mode": "0644"}}]}]}}`, nil)
		code, out, _ := run("apply", bad, "--host", "sim-0001", "--host", "sim-0002")
		Expect(code).To(Equal(2))
		l := lines(out)
		Expect(l[0]).To(HavePrefix("request refused: 2 hosts (bad_request: manifest: resources[0] file#" + target + "/x: "))
		Expect(l[0]).To(HaveSuffix(") on sim-0001, sim-0002"))
		Expect(filepath.Join(target, "x")).NotTo(BeAnExistingFile())
	})

	DescribeTable("refuses what cannot be sent with exit 1 and one line, sending nothing",
		func(args func() []string, want string) {
			code, out, errOut := run(args()...)
			Expect(code).To(Equal(1))
			Expect(out).To(BeEmpty())
			Expect(lines(errOut)).To(HaveLen(1))
			Expect(errOut).To(ContainSubstring(want))
		},
		Entry("a missing manifest", func() []string { return []string{"apply", "/nonexistent/site.yaml"} }, "/nonexistent/site.yaml"),
		Entry("an unknown property", func() []string {
			return []string{"audit", writeManifest(`{"ccm": {"resources": [{"file": [{"/tmp/x": {"colour": "red"}}]}]}}`, nil)}
		}, `resources[0] file#/tmp/x: unknown property "colour"`),
		Entry("a source outside the manifest directory", func() []string {
			return []string{"apply", writeManifest(`{"ccm": {"resources": [{"file": [{"/tmp/x": {"source": "../secret"}}]}]}}`, nil)}
		}, "must stay inside the manifest's directory"),
		Entry("--json with --jsonl", func() []string { return []string{"apply", site, "--json", "--jsonl"} }, "cannot be used together"),
		Entry("a filter that does not parse", func() []string { return []string{"audit", site, "--where", "os=~["} }, `filter "os=~["`),
		Entry("no manifest", func() []string { return []string{"audit"} }, "required argument 'manifest'"),
	)
})
