package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/broker/brokertest"
)

var _ = Describe("ccm-orch assign and assignments", Ordered, func() {
	var (
		server []string
		dir    string
		site   string
		seed   string
	)
	with := func(args ...string) []string { return append(args, server...) }

	BeforeAll(func() {
		b := brokertest.Start(GinkgoT())
		server = []string{"--server", b.ClientURL()}
		dir = GinkgoT().TempDir()
		code, _, errOut := orch(with("history", "init")...)
		Expect(code).To(Equal(0), errOut)
		code, _, errOut = orch("keys", "new", "ops", "--dir", dir)
		Expect(code).To(Equal(0), errOut)
		seed = filepath.Join(dir, "ops.seed")
		site = filepath.Join(dir, "site.yaml")
		Expect(os.WriteFile(site, []byte(`data:
  text: hello
ccm:
  resources:
    - file:
        - /etc/motd:
            content: "{{ lookup('data.text') }}\n"
            owner: root
            group: root
            mode: "0644"
`), 0o644)).To(Succeed())
	})

	It("stores a signed assignment and prints its revision", func() {
		code, out, errOut := orch(with("assign", "web", site, "--where", "role=web", "--interval", "10m", "--splay", "1m", "--key", seed)...)
		Expect(code).To(Equal(0), errOut)
		Expect(out).To(Equal("assignment web revision 1: role=web, every 10m0s (splay 1m0s), apply\n"))
		data := filepath.Join(dir, "data.yaml")
		Expect(os.WriteFile(data, []byte("text: bye\n"), 0o644)).To(Succeed())
		code, out, errOut = orch(with("assign", "web", site, "--where", "role=web", "--noop", "--data", data, "--key", seed)...)
		Expect(code).To(Equal(0), errOut)
		Expect(out).To(HavePrefix("assignment web revision 2: role=web, every 30m0s, audit (noop)"))
	})

	It("lists, shows a revision, its history, and removes", func() {
		code, out, errOut := orch(with("assignments", "list")...)
		Expect(code).To(Equal(0), errOut)
		Expect(lines(out)).To(HaveLen(2))
		Expect(lines(out)[1]).To(MatchRegexp(`^web\s+2\s+role=web\s+30m0s\s+0s\s+audit \(noop\)\s+\S*site.yaml\s+U`))

		code, out, errOut = orch(with("assignments", "show", "web", "--revision", "1", "--json")...)
		Expect(code).To(Equal(0), errOut)
		var doc struct {
			Revision   int
			Signer     string
			Assignment struct {
				Interval string
				Noop     bool
				Manifest struct {
					Manifest map[string]any
				}
			}
		}
		Expect(json.Unmarshal([]byte(out), &doc)).To(Succeed())
		Expect(doc.Revision).To(Equal(1))
		Expect(doc.Assignment.Interval).To(Equal("10m0s"))
		Expect(doc.Assignment.Noop).To(BeFalse())
		Expect(doc.Assignment.Manifest.Manifest).To(HaveKeyWithValue("data", map[string]any{"text": "hello"}))
		Expect(doc.Signer).To(HavePrefix("U"))

		code, out, _ = orch(with("assignments", "show", "web", "--json")...)
		Expect(code).To(Equal(0))
		Expect(out).To(ContainSubstring(`"revision": 2`))
		Expect(json.Unmarshal([]byte(out), &doc)).To(Succeed())
		Expect(doc.Assignment.Manifest.Manifest).To(HaveKeyWithValue("data", map[string]any{"text": "bye"}), "--data merged over the manifest's")

		code, out, _ = orch(with("assignments", "show", "web")...)
		Expect(code).To(Equal(0))
		Expect(out).To(ContainSubstring("file#/etc/motd"))
		Expect(out).To(ContainSubstring("schedule: every 30m0s"))

		// Without a key nothing is removed: agents ignore unsigned removals.
		suite := os.Getenv("CCM_KEY")
		Expect(os.Unsetenv("CCM_KEY")).To(Succeed())
		code, _, errOut = orch(with("assignments", "rm", "web")...)
		Expect(os.Setenv("CCM_KEY", suite)).To(Succeed())
		Expect(code).To(Equal(1))
		Expect(errOut).To(ContainSubstring("assignments rm web: --key FILE (or CCM_KEY) is required"))
		code, out, _ = orch(with("assignments", "show", "web", "--json")...)
		Expect(code).To(Equal(0))
		Expect(out).To(ContainSubstring(`"revision": 2`))

		code, out, errOut = orch(with("assignments", "rm", "web", "--key", seed)...)
		Expect(code).To(Equal(0), errOut)
		Expect(out).To(Equal("assignment web removed (revision 3, a signed removal)\n"))
		code, out, _ = orch(with("assignments", "list")...)
		Expect(code).To(Equal(0))
		Expect(lines(out)).To(HaveLen(2))
		Expect(lines(out)[1]).To(MatchRegexp(`^web\s+3\s+\(removed \S+ \S+\)\s+U`))
		code, out, _ = orch(with("assignments", "list", "--json")...)
		Expect(code).To(Equal(0))
		Expect(out).To(ContainSubstring(`"protocol": "io.choria.ccm.v1.assignment.removal"`))
		code, out, _ = orch(with("assignments", "show", "web", "--history")...)
		Expect(code).To(Equal(0))
		Expect(lines(out)).To(HaveLen(4))
		Expect(lines(out)[3]).To(ContainSubstring("(removed)"))
		code, out, _ = orch(with("assignments", "show", "web")...)
		Expect(code).To(Equal(0))
		Expect(out).To(ContainSubstring("a signed removal: agents stop running it"))
		code, _, errOut = orch(with("assignments", "rm", "web", "--key", seed)...)
		Expect(code).To(Equal(1))
		Expect(errOut).To(ContainSubstring(`no such assignment "web": removed at `))
	})

	DescribeTable("refuses bad input with exit 1, storing nothing",
		func(problem string, args ...string) {
			for i, a := range args {
				args[i] = strings.NewReplacer("SITE", site, "SEED", seed).Replace(a)
			}
			code, _, errOut := orch(with(args...)...)
			Expect(code).To(Equal(1))
			Expect(errOut).To(ContainSubstring(problem))
			_, out, _ := orch(with("assignments", "list")...)
			Expect(out).ToNot(MatchRegexp(`(?m)^(x|a\.b)\s`))
		},
		Entry("a file that is not a manifest", "manifest /etc/hostname: expected an object", "assign", "x", "/etc/hostname"),
		Entry("a name with a dot", "character at position 1 is not allowed", "assign", "a.b", "/etc/hostname", "--key", "/nonexistent"),
		Entry("an interval too short", "field \"interval\": 10ms is not between", "assign", "x", "SITE", "--interval", "10ms", "--key", "SEED"),
		Entry("a splay longer than the interval", "field \"splay\"", "assign", "x", "SITE", "--interval", "1m", "--splay", "2m", "--key", "SEED"),
		Entry("a bad filter", "filter", "assign", "x", "SITE", "--where", "role", "--key", "SEED"),
		Entry("a missing key file", "key", "assign", "x", "SITE", "--key", "/nonexistent/ops.seed"),
		Entry("an unknown revision", "revision 99", "assignments", "show", "none", "--revision", "99"),
	)
})
