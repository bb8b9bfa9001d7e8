package integration_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"gopkg.in/yaml.v3"

	"github.com/ccm-fleet/ccm/protocol"
)

// Narrowing the selected hosts with the real ccm-orch against simulated
// agents: --hosts-file, --sample with --seed, --hosts-from with --outcome,
// ANDed with --where and --select; the hosts left out never run anything.
// Then the fact reports (discover --fact, facts KEY) and --yaml.
var _ = Describe("Targeting: --hosts-file, --sample, --hosts-from", Ordered, func() {
	const expr = "(os=debian and role=web) or role=db"
	var f *fleet

	BeforeAll(func() {
		nested := map[string]any{"info": map[string]any{"platformFamily": "debian", "cores": 4}}
		f = startFleetWith(fleetOptions{history: true}, 24, "tgt", map[string]any{"dc": "ams", "host": nested, "disks": []any{map[string]any{"name": "sda"}}},
			"os=debian,rhel", "role=web,db,cache", "env=dev,prod,test,stage")
	})

	// want computes locally which simulated hosts a filter selects.
	want := func(where []string, sel string) []string {
		flt, err := protocol.NewFilterSelect(where, nil, sel)
		Expect(err).ToNot(HaveOccurred())
		var out []string
		for id, fs := range f.factsOf() {
			if flt.Match(fs) {
				out = append(out, id)
			}
		}
		sort.Strings(out)
		return out
	}

	// touched lists the files in dir.
	touched := func(dir string) []string {
		entries, err := os.ReadDir(dir)
		Expect(err).ToNot(HaveOccurred())
		out := []string{}
		for _, e := range entries {
			out = append(out, e.Name())
		}
		return out
	}

	// touch is an exec command that leaves a file named after the host in dir.
	touch := func(dir string) string {
		return "/bin/touch " + filepath.Join(dir, "{{ lookup('facts.identity') }}")
	}

	// hostsFile writes lines to a file and returns its path.
	hostsFile := func(lines ...string) string {
		p := filepath.Join(GinkgoT().TempDir(), "hosts.txt")
		Expect(os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o600)).To(Succeed())
		return p
	}

	// discovered runs discover --json with args and returns the identities.
	discovered := func(args ...string) []string {
		code, out, errOut := f.orch(append([]string{"discover", "--json"}, args...)...)
		Expect(code).To(Equal(0), errOut)
		var nodes []map[string]any
		Expect(json.Unmarshal([]byte(out), &nodes)).To(Succeed())
		got := []string{}
		for _, n := range nodes {
			got = append(got, n["identity"].(string))
		}
		sort.Strings(got)
		return got
	}

	Context("--hosts-file", func() {
		It("runs on exactly the hosts the file lists, more than a node subject each, ignoring blank lines and comments", func() {
			all := want(nil, "")
			listed := all[:13]
			lines := []string{"# the canary hosts", ""}
			for i, h := range listed {
				if i%4 == 0 {
					h += "   # trailing comment"
				}
				lines = append(lines, "  "+h, "")
			}
			dir := GinkgoT().TempDir()
			code, doc := f.orchJSON("ensure", "exec", touch(dir), "--hosts-file", hostsFile(lines...))
			Expect(code).To(Equal(0))
			Expect(identities(doc, "expected")).To(Equal(listed))
			Expect(identities(doc, "unexpected")).To(BeEmpty())
			Expect(touched(dir)).To(Equal(listed), "the hosts the file leaves out ran nothing")
		})

		It("ANDs the file with --where and --select", func() {
			file := hostsFile(want(nil, "")[:12]...)
			var both []string
			for _, h := range want([]string{"env=dev"}, expr) {
				if slices.Contains(want(nil, "")[:12], h) {
					both = append(both, h)
				}
			}
			Expect(both).ToNot(BeEmpty())
			Expect(len(both)).To(BeNumerically("<", 12))
			Expect(discovered("--hosts-file", file, "--where", "env=dev", "-S", expr)).To(Equal(both))

			dir := GinkgoT().TempDir()
			code, doc := f.orchJSON("ensure", "exec", touch(dir), "--hosts-file", file, "--where", "env=dev", "--select", expr)
			Expect(code).To(Equal(0))
			Expect(identities(doc, "expected")).To(Equal(both))
			Expect(touched(dir)).To(Equal(both))
		})

		It("refuses an invalid identity naming its line, sending nothing", func() {
			dir := GinkgoT().TempDir()
			file := hostsFile("# hosts", "tgt-1", "", "web 7")
			code, out, errOut := f.orch("ensure", "exec", touch(dir), "--hosts-file", file)
			Expect(code).To(Equal(1))
			Expect(out).To(BeEmpty())
			Expect(errOut).To(ContainSubstring("--hosts-file " + file + " line 4: identity \"web 7\""))
			Expect(touched(dir)).To(BeEmpty())

			code, _, errOut = f.orch("discover", "--hosts-file", hostsFile("# nobody", ""))
			Expect(code).To(Equal(1))
			Expect(errOut).To(ContainSubstring("lists no host"))
		})

		DescribeTable("refuses a hostile host list with one short line naming it, sending nothing",
			func(lines []string, want string) {
				dir := GinkgoT().TempDir()
				file := hostsFile(lines...)
				code, out, errOut := f.orch("ensure", "exec", touch(dir), "--hosts-file", file)
				Expect(code).To(Equal(1))
				Expect(out).To(BeEmpty())
				Expect(errOut).To(ContainSubstring(want))
				Expect(len(errOut)).To(BeNumerically("<", 400), "the error stays short")
				Expect(touched(dir)).To(BeEmpty())
			},
			Entry("invalid UTF-8", []string{"tgt-1", "\xff\xfeweb"}, `line 2: identity "\xff\xfeweb": character`),
			Entry("a NUL byte", []string{"tgt-1\x00tgt-2"}, `line 1: identity "tgt-1\x00tgt-2": character '\x00' at position 5`),
			Entry("a 300,000-byte line", []string{strings.Repeat("a", 300000)}, `… (300000 bytes): is 300000 characters long, the limit is 253`),
		)
	})

	Context("--sample", func() {
		It("picks the same hosts of those selected for the same seed, and runs only there", func() {
			first := discovered("-S", expr, "--sample", "5", "--seed", "7")
			Expect(first).To(HaveLen(5))
			for _, h := range first {
				Expect(want(nil, expr)).To(ContainElement(h))
			}
			Expect(discovered("-S", expr, "--sample", "5", "--seed", "7")).To(Equal(first))
			Expect(discovered("-S", expr, "--sample", "5", "--seed", "8")).ToNot(Equal(first))

			dir := GinkgoT().TempDir()
			code, doc := f.orchJSON("ensure", "exec", touch(dir), "-S", expr, "--sample", "5", "--seed", "7")
			Expect(code).To(Equal(0))
			Expect(identities(doc, "expected")).To(Equal(first))
			Expect(doc["sample"]).To(Equal(map[string]any{"seed": 7.0, "of": 12.0, "kept": 5.0}))
			Expect(touched(dir)).To(Equal(first), "the hosts left out of the sample ran nothing")

			// History keeps how the hosts were picked, so the run can be
			// repeated from it.
			id := doc["request_id"].(string)
			code, out, errOut := f.orch("history", "show", id)
			Expect(code).To(Equal(0), errOut)
			Expect(out).To(ContainSubstring(", sampled 5 of 12 hosts with --seed 7\n"))
			code, shown := f.orchJSON("history", "show", id)
			Expect(code).To(Equal(0))
			Expect(shown["sample"]).To(Equal(doc["sample"]))
		})

		It("takes a percentage, rounded up", func() {
			Expect(discovered("-S", expr, "--sample", "25%", "--seed", "1")).To(HaveLen(3))
		})

		It("prints the random seed it chose, and that seed picks the same hosts again", func() {
			code, out, errOut := f.orch("ensure", "exec", "/bin/true", "--sample", "4")
			Expect(code).To(Equal(0), errOut)
			m := regexp.MustCompile(`sampled 4 of 24 hosts with --seed (\d+)`).FindStringSubmatch(errOut)
			Expect(m).ToNot(BeNil(), errOut)
			Expect(out).To(ContainSubstring("4 expected"))
			code, doc := f.orchJSON("ensure", "exec", "/bin/true", "--sample", "4", "--seed", m[1])
			Expect(code).To(Equal(0))
			Expect(identities(doc, "expected")).To(Equal(discovered("--sample", "4", "--seed", m[1])))
		})

		It("refuses a bad size and a seed without a sample", func() {
			code, _, errOut := f.orch("discover", "--sample", "0")
			Expect(code).To(Equal(1))
			Expect(errOut).To(ContainSubstring(`--sample "0": use a whole number`))
			code, _, errOut = f.orch("discover", "--seed", "3")
			Expect(code).To(Equal(1))
			Expect(errOut).To(ContainSubstring("--seed needs --sample"))
		})
	})

	Context("--hosts-from", func() {
		var failedRun string

		BeforeAll(func() {
			// Fails everywhere but on the db hosts.
			code, doc := f.orchJSON("ensure", "exec", "/usr/bin/test {{ lookup('facts.role') }} = db")
			Expect(code).To(Equal(2))
			failedRun = doc["request_id"].(string)
			Expect(doc["summary"]).To(HaveKeyWithValue("hosts", HaveKeyWithValue("failed", BeNumerically("==", 16))))
		})

		It("reruns on exactly the hosts that failed (the default outcome)", func() {
			dir := GinkgoT().TempDir()
			code, doc := f.orchJSON("ensure", "exec", touch(dir), "--hosts-from", failedRun)
			Expect(code).To(Equal(0))
			notDB := want([]string{"role!=db"}, "")
			Expect(identities(doc, "expected")).To(Equal(notDB))
			Expect(touched(dir)).To(Equal(notDB))

			code, out, errOut := f.orch("history", "show", doc["request_id"].(string))
			Expect(code).To(Equal(0), errOut)
			Expect(out).To(ContainSubstring(fmt.Sprintf(", of %d hosts listed\n", len(notDB))))
		})

		It("takes the hosts of another outcome, ANDed with --where", func() {
			dir := GinkgoT().TempDir()
			code, doc := f.orchJSON("ensure", "exec", touch(dir), "--hosts-from", failedRun, "--outcome", "changed", "--where", "os=rhel")
			Expect(code).To(Equal(0))
			hosts := want([]string{"role=db", "os=rhel"}, "")
			Expect(hosts).To(HaveLen(4))
			Expect(identities(doc, "expected")).To(Equal(hosts))
			Expect(touched(dir)).To(Equal(hosts))
		})

		It("refuses an unknown request and an outcome no host had, sending nothing", func() {
			dir := GinkgoT().TempDir()
			code, out, errOut := f.orch("ensure", "exec", touch(dir), "--hosts-from", "nosuchrequest0000000")
			Expect(code).To(Equal(1))
			Expect(out).To(BeEmpty())
			Expect(errOut).To(ContainSubstring("--hosts-from nosuchrequest0000000: history has no record of that request"))

			code, _, errOut = f.orch("ensure", "exec", touch(dir), "--hosts-from", failedRun, "--outcome", "would_change")
			Expect(code).To(Equal(1))
			Expect(errOut).To(ContainSubstring("has no host with outcome would_change (it has 16 failed, 8 changed)"))

			code, _, errOut = f.orch("ensure", "exec", touch(dir), "--hosts-from", failedRun, "--outcome", "broken")
			Expect(code).To(Equal(1))
			Expect(errOut).To(ContainSubstring(`--outcome "broken": use one of failed, no_reply, would_change, changed, ok`))
			Expect(touched(dir)).To(BeEmpty())
		})
	})

	Context("fact reports", func() {
		It("discover --fact adds a column per fact", func() {
			code, out, errOut := f.orch("discover", "--host", "tgt-0008", "--fact", "env", "--fact", "dc", "--fact", "nosuch.fact")
			Expect(code).To(Equal(0), errOut)
			lines := strings.Split(strings.TrimSpace(out), "\n")
			Expect(strings.Fields(lines[0])).To(Equal([]string{"IDENTITY", "OS", "PLATFORM", "OS_VERSION", "ROLE", "VERSION", "env", "dc", "nosuch.fact"}))
			fields := strings.Fields(lines[1])
			Expect(fields[0]).To(Equal("tgt-0008"))
			Expect(fields[len(fields)-3:]).To(Equal([]string{"prod", "ams", "-"}))
		})

		It("asks the agents for nested facts (dotted keys), which the registry does not keep", func() {
			code, out, errOut := f.orch("discover", "--where", "role=db", "--fact", "host.info.platformFamily", "--fact", "host.info.cores", "--fact", "disks.0.name", "--fact", "host.nosuch")
			Expect(code).To(Equal(0), errOut)
			lines := strings.Split(strings.TrimSpace(out), "\n")
			Expect(lines).To(HaveLen(8 + 2))
			Expect(lines[0]).To(HaveSuffix("host.info.platformFamily  host.info.cores  disks.0.name  host.nosuch"))
			for _, l := range lines[1:9] {
				Expect(strings.Fields(l)[6:]).To(Equal([]string{"debian", "4", "sda", "-"}), l)
			}

			code, out, errOut = f.orch("facts", "host.info.platformFamily", "-S", expr)
			Expect(code).To(Equal(0), errOut)
			Expect(out).To(MatchRegexp(`(?s)VALUE\s+COUNT\ndebian\s+12\nhost.info.platformFamily: 1 value of 12 hosts\n`))

			code, _, errOut = f.orch("facts", "host.info.platformFamily", "--discovery", "registry")
			Expect(code).To(Equal(1))
			Expect(errOut).To(ContainSubstring("the registry keeps flat facts only, so host.info.platformFamily needs --discovery broadcast"))
		})

		It("facts KEY counts each value, the most common first, with --where and --select", func() {
			code, out, errOut := f.orch("facts", "role", "-S", expr)
			Expect(code).To(Equal(0), errOut)
			Expect(out).To(MatchRegexp(`(?s)VALUE\s+COUNT\ndb\s+8\nweb\s+4\nrole: 2 values of 12 hosts\n`))

			code, out, errOut = f.orch("facts", "os", "--where", "role=cache", "--json")
			Expect(code).To(Equal(0), errOut)
			var d map[string]any
			Expect(json.Unmarshal([]byte(out), &d)).To(Succeed())
			Expect(d["fact"]).To(Equal("os"))
			Expect(d["hosts"]).To(BeNumerically("==", 8))
			Expect(d["missing"]).To(BeNumerically("==", 0))
			values := d["values"].([]any)
			Expect(values).To(HaveLen(2))
			Expect(values[0]).To(HaveKeyWithValue("value", "debian"))
			Expect(values[0]).To(HaveKeyWithValue("count", BeNumerically("==", 4)))
			Expect(values[1]).To(HaveKeyWithValue("value", "rhel"))

			code, _, _ = f.orch("facts", "os", "--where", "role=nobody")
			Expect(code).To(Equal(4))
		})
	})

	Context("--yaml", func() {
		// sameDocument checks that the YAML text is the JSON text's document.
		sameDocument := func(jsonText, yamlText string) {
			var fromJSON, fromYAML, decoded any
			Expect(json.Unmarshal([]byte(jsonText), &fromJSON)).To(Succeed())
			Expect(yaml.Unmarshal([]byte(yamlText), &decoded)).To(Succeed(), yamlText)
			j, err := json.Marshal(decoded)
			Expect(err).ToNot(HaveOccurred())
			Expect(json.Unmarshal(j, &fromYAML)).To(Succeed())
			Expect(fromYAML).To(Equal(fromJSON))
		}

		It("prints the same document as --json: discover, facts, a run and its history", func() {
			_, js, _ := f.orch("discover", "--where", "role=web", "--json")
			_, ym, _ := f.orch("discover", "--where", "role=web", "--yaml")
			sameDocument(js, ym)

			_, js, _ = f.orch("facts", "env", "--json")
			_, ym, _ = f.orch("facts", "env", "--yaml")
			sameDocument(js, ym)

			code, ym, errOut := f.orch("ensure", "exec", "/bin/true", "--where", "role=db", "--yaml")
			Expect(code).To(Equal(0), errOut)
			var run map[string]any
			Expect(yaml.Unmarshal([]byte(ym), &run)).To(Succeed())
			id, _ := run["request_id"].(string)
			Expect(id).ToNot(BeEmpty(), ym)
			Expect(run["expected"]).To(HaveLen(8))

			Eventually(func() int { c, _, _ := f.orch("history", "show", id, "--json"); return c }).Should(Equal(0))
			_, js, _ = f.orch("history", "show", id, "--json")
			_, ym, _ = f.orch("history", "show", id, "--yaml")
			sameDocument(js, ym)
			_, js, _ = f.orch("history", "list", "--json")
			_, ym, _ = f.orch("history", "list", "--yaml")
			sameDocument(js, ym)
		})

		It("refuses --yaml with another format, sending nothing", func() {
			code, out, errOut := f.orch("ensure", "exec", "/bin/true", "--json", "--yaml")
			Expect(code).To(Equal(1))
			Expect(out).To(BeEmpty())
			Expect(errOut).To(ContainSubstring("--json and --yaml cannot be used together"))
			code, _, errOut = f.orch("ensure", "exec", "/bin/true", "--jsonl", "--yaml")
			Expect(code).To(Equal(1))
			Expect(errOut).To(ContainSubstring("--jsonl and --yaml cannot be used together"))
			code, _, errOut = f.orch("discover", "--json", "--yaml")
			Expect(code).To(Equal(1))
			Expect(errOut).To(ContainSubstring("--json and --yaml cannot be used together"))
		})
	})
})
