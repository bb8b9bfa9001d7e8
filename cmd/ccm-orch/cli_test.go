package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/nats-io/nats.go"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/orchestrator/fleettest"
)

// orch runs the CLI in-process and returns exit code, stdout and stderr.
func orch(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// lines splits output into its non-empty lines.
func lines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}

const fleetSize = 24

var _ = Describe("ccm-orch", func() {
	var (
		fl     *fleettest.Fleet
		server []string
		debian []string
	)
	BeforeEach(func() {
		fl = fleettest.Start(GinkgoT(), fleetSize, nil, "os=debian,rhel", "role=web,db")
		server = []string{"--server", fl.URL()}
		debian = nil
		for i, f := range fl.Facts {
			if f["os"] == "debian" {
				debian = append(debian, fl.Identities[i])
			}
		}
	})

	Describe("discover", func() {
		It("prints the matching hosts as an aligned table", func() {
			code, out, errOut := orch(append([]string{"discover", "--where", "os=debian"}, server...)...)
			Expect(code).To(Equal(0), errOut)
			l := lines(out)
			Expect(l).To(HaveLen(len(debian) + 2))
			Expect(strings.Fields(l[0])).To(Equal([]string{"IDENTITY", "OS", "PLATFORM", "OS_VERSION", "ROLE", "VERSION"}))
			Expect(strings.Fields(l[1])).To(Equal([]string{"sim-0001", "debian", "-", "-", "web", "fleettest"}), "VERSION is the agent's, as in --json")
			Expect(strings.Index(l[1], "debian")).To(Equal(strings.Index(l[0], "OS")), "columns are aligned")
			Expect(l[len(l)-1]).To(Equal(fmt.Sprintf("%d hosts", len(debian))))
		})

		It("prints JSON with --json", func() {
			code, out, _ := orch(append([]string{"discover", "--host", "sim-0002", "--json"}, server...)...)
			Expect(code).To(Equal(0))
			var nodes []map[string]any
			Expect(json.Unmarshal([]byte(out), &nodes)).To(Succeed())
			Expect(nodes).To(HaveLen(1))
			Expect(nodes[0]).To(HaveKeyWithValue("identity", "sim-0002"))
			Expect(nodes[0]).To(HaveKeyWithValue("version", "fleettest"), "the agent's version, as the table's VERSION")
			Expect(nodes[0]).To(HaveKeyWithValue("facts", HaveKeyWithValue("os", "rhel")))
		})

		It("exits 4 with one line when nothing matches", func() {
			code, out, errOut := orch(append([]string{"discover", "--where", "os=plan9"}, server...)...)
			Expect(code).To(Equal(4))
			Expect(out).To(BeEmpty())
			Expect(errOut).To(Equal("ccm-orch: discovery: no node registry entry matches the filter (of 24 entries); discovered by broadcast instead: 0 hosts\n"+
				"ccm-orch: no host matched the filter\n"), "an empty registry answer is checked by a broadcast, and said")
		})
	})

	Describe("ensure", func() {
		var dir, name string
		fileArgs := func(content string, extra ...string) []string {
			args := []string{"ensure", "file", name, "present", "--content", content, "--owner", "root", "--group", "root", "--mode", "0644"}
			return append(append(args, extra...), server...)
		}
		BeforeEach(func() {
			dir = GinkgoT().TempDir()
			for _, id := range fl.Identities {
				Expect(os.Mkdir(filepath.Join(dir, id), 0o755)).To(Succeed())
			}
			name = dir + "/{{ lookup('facts.identity') }}/motd"
		})

		It("changes the selected hosts, then finds them stable", func() {
			code, out, errOut := orch(fileArgs("hi", "--where", "os=debian")...)
			Expect(code).To(Equal(0), errOut)
			l := lines(out)
			Expect(l[0]).To(Equal(fmt.Sprintf("%d hosts: file#%s changed", len(debian), name)))
			Expect(l[1]).To(HavePrefix("    sim-0001, sim-0003, "))
			// This fleet has no history stream: the summary and stderr say the request was not recorded.
			Expect(l[len(l)-1]).To(MatchRegexp(`^12 expected, 12 replied: 0 ok, 12 changed, 0 failed, 0 no reply; history: request record not kept: no history stream CCM_HISTORY .* \(request [a-z0-9]{20}, .*\)$`))
			Expect(errOut).To(MatchRegexp(`^ccm-orch: history: the record of request [a-z0-9]{20} was not kept: no history stream CCM_HISTORY [^\n]*\(history show will not find it\)\n$`),
				"no progress line when stderr is not a terminal")
			for _, id := range debian {
				Expect(os.ReadFile(filepath.Join(dir, id, "motd"))).To(Equal([]byte("hi")))
			}
			Expect(filepath.Join(dir, "sim-0002", "motd")).NotTo(BeAnExistingFile())

			code, out, _ = orch(fileArgs("hi", "--where", "os=debian")...)
			Expect(code).To(Equal(0))
			Expect(lines(out)[0]).To(Equal(fmt.Sprintf("%d hosts: file#%s stable", len(debian), name)))
		})

		It("prints the result as JSON with --json", func() {
			code, out, _ := orch(fileArgs("hi", "--json")...)
			Expect(code).To(Equal(0))
			var doc map[string]any
			Expect(json.Unmarshal([]byte(out), &doc)).To(Succeed())
			for _, k := range []string{"request_id", "expected", "replied", "no_reply", "unexpected", "not_asked", "summary", "hosts", "groups", "exit_code"} {
				Expect(doc).To(HaveKey(k))
			}
			Expect(doc["replied"]).To(Equal(float64(fleetSize)))
			Expect(doc["exit_code"]).To(Equal(0.0))
			Expect(doc["hosts"]).To(HaveLen(fleetSize))
		})

		It("streams one line per reply with --jsonl, then the result", func() {
			code, out, _ := orch(fileArgs("hi", "--jsonl", "--where", "role=web")...)
			Expect(code).To(Equal(0))
			l := lines(out)
			Expect(l).To(HaveLen(fleetSize/2 + 1))
			for _, line := range l[:fleetSize/2] {
				var h map[string]any
				Expect(json.Unmarshal([]byte(line), &h)).To(Succeed())
				Expect(h).To(HaveKeyWithValue("kind", "host_result"))
				Expect(h).To(HaveKeyWithValue("outcome", "changed"))
				Expect(h).To(HaveKey("identity"))
			}
			var res map[string]any
			Expect(json.Unmarshal([]byte(l[len(l)-1]), &res)).To(Succeed())
			Expect(res).To(HaveKeyWithValue("kind", "result"))
			Expect(res).To(HaveKeyWithValue("replied", float64(fleetSize/2)))
		})

		It("exits 5 under noop when something would change, changing nothing", func() {
			code, out, _ := orch(fileArgs("hi", "--noop", "--where", "os=rhel")...)
			Expect(code).To(Equal(5))
			Expect(lines(out)[0]).To(HavePrefix(fmt.Sprintf("12 hosts: file#%s would change: ", name)))
			Expect(out).To(ContainSubstring("12 would change"))
			Expect(filepath.Join(dir, "sim-0002", "motd")).NotTo(BeAnExistingFile())
		})

		It("exits 2 and names the hosts when a resource fails", func() {
			code, out, _ := orch(append([]string{"ensure", "exec", "/bin/false", "--where", "role=db"}, server...)...)
			Expect(code).To(Equal(2))
			l := lines(out)
			Expect(l[0]).To(HavePrefix("12 hosts: exec#/bin/false failed: "))
			Expect(l[0]).To(ContainSubstring("exit code 1"))
			Expect(l[1]).To(HavePrefix("    sim-0003, sim-0004, sim-0007, "))
		})

		It("exits 3 and lists a listed host that never replied", func() {
			code, out, _ := orch(append([]string{"ensure", "exec", "/bin/true", "--host", "sim-0001", "--host", "ghost-1", "--timeout", "1s"}, server...)...)
			Expect(code).To(Equal(3))
			Expect(out).To(ContainSubstring("1 host: exec#/bin/true changed\n    sim-0001\n"))
			Expect(out).To(ContainSubstring("1 host did not reply:\n    ghost-1\n"))
			Expect(out).To(ContainSubstring("2 expected, 1 replied"))
		})

		It("exits 4 with one line when no host matches", func() {
			code, out, errOut := orch(append([]string{"ensure", "exec", "/bin/true", "--where", "os=plan9"}, server...)...)
			Expect(code).To(Equal(4))
			Expect(out).To(BeEmpty())
			Expect(errOut).To(Equal("ccm-orch: discovery: no node registry entry matches the filter (of 24 entries); discovered by broadcast instead: 0 hosts\n"+
				"ccm-orch: no host matched the filter\n"), "an empty registry answer is checked by a broadcast, and said")
		})

		It("stops a batched run after max failures and lists the hosts not asked", func() {
			code, out, _ := orch(append([]string{"ensure", "exec", "/bin/false", "--batch", "2", "--max-failures", "1"}, server...)...)
			Expect(code).To(Equal(2))
			Expect(out).To(ContainSubstring("22 hosts were not asked:\n    sim-0003, "))
			Expect(out).To(ContainSubstring(" and 2 more\n"))
			Expect(out).To(ContainSubstring("24 expected, 2 replied: 0 ok, 0 changed, 2 failed, 0 no reply, 22 not asked"))
		})

		It("refuses a filter that does not parse with one line, before sending anything", func() {
			nc, err := nats.Connect(fl.URL())
			Expect(err).NotTo(HaveOccurred())
			defer nc.Close()
			sub, err := nc.SubscribeSync("ccm.v1.>")
			Expect(err).NotTo(HaveOccurred())
			Expect(nc.Flush()).To(Succeed())

			code, out, errOut := orch(append([]string{"ensure", "exec", "/bin/true", "--where", "os=~["}, server...)...)
			Expect(code).To(Equal(1))
			Expect(out).To(BeEmpty())
			Expect(errOut).To(Equal("ccm-orch: filter \"os=~[\": invalid regular expression: missing closing ]: `[`\n"))
			Expect(nc.Flush()).To(Succeed())
			n, _, err := sub.Pending()
			Expect(err).NotTo(HaveOccurred())
			Expect(n).To(BeZero())

			// Nor does it try to connect: an unreachable server makes no difference.
			code, _, errOut = orch("ensure", "exec", "/bin/true", "--where", "os<debian", "--server", "nats://127.0.0.1:1")
			Expect(code).To(Equal(1))
			Expect(lines(errOut)).To(HaveLen(1))
			Expect(errOut).To(HavePrefix(`ccm-orch: filter "os<debian": `))
		})
	})

	DescribeTable("refuses bad usage with exit 1 and one line",
		func(args []string, want string) {
			code, out, errOut := orch(args...)
			Expect(code).To(Equal(1))
			Expect(out).To(BeEmpty())
			Expect(lines(errOut)).To(HaveLen(1))
			Expect(errOut).To(ContainSubstring(want))
		},
		Entry("a bad batch", []string{"ensure", "exec", "/bin/true", "--batch", "ten"}, `--batch "ten": use a whole number`),
		Entry("a batch over 100%", []string{"ensure", "exec", "/bin/true", "--batch", "150%"}, "at most 100%"),
		Entry("--json with --jsonl", []string{"ensure", "exec", "/bin/true", "--json", "--jsonl"}, "cannot be used together"),
		Entry("a bad --host", []string{"discover", "--host", "a..b"}, `host "a..b"`),
		Entry("an unreachable server", []string{"discover", "--server", "nats://127.0.0.1:1"}, "127.0.0.1:1"),
		Entry("a missing resource name", []string{"ensure", "file"}, "required argument 'name'"),
	)
})
