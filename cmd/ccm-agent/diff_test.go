package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("ccm-agent --diff", func() {
	var dir string
	BeforeEach(func() { dir = GinkgoT().TempDir() })

	It("prints the diff under an ensure's line, and --json carries it without --diff", func() {
		f := filepath.Join(dir, "conf")
		Expect(os.WriteFile(f, []byte("a\nb\nc\n"), 0o600)).To(Succeed())
		args := []string{"ensure", "file", f, "--content", "a\nB\nc\n", "--owner", "root", "--group", "root", "--mode", "0644", "--noop"}
		code, out, errOut := agent(append(args, "--diff")...)
		Expect(code).To(Equal(5), errOut)
		Expect(out).To(Equal("file#" + f + " would change: Would have created the file: content differs, mode 0600 should be 0644\n" +
			"    mode 0600 → 0644\n" +
			"    --- " + f + " (current)\n" +
			"    +++ " + f + " (desired)\n" +
			"    @@ -1,3 +1,3 @@\n" +
			"     a\n" +
			"    -b\n" +
			"    +B\n" +
			"     c\n"))

		code, out, _ = agent(args...)
		Expect(code).To(Equal(5))
		Expect(strings.Count(out, "\n")).To(Equal(1), "no diff without --diff")

		code, out, _ = agent(append(args, "--json")...)
		Expect(code).To(Equal(5))
		var resp struct {
			State struct {
				Diff struct {
					Content string
					Changes []map[string]string
				}
			}
		}
		Expect(json.Unmarshal([]byte(out), &resp)).To(Succeed())
		Expect(resp.State.Diff.Content).To(ContainSubstring("-b\n+B\n"))
		Expect(resp.State.Diff.Changes).To(Equal([]map[string]string{{"field": "mode", "from": "0600", "to": "0644"}}))
	})

	It("summarises content over --diff-max-bytes", func() {
		f := filepath.Join(dir, "big")
		Expect(os.WriteFile(f, []byte(strings.Repeat("x\n", 100)), 0o644)).To(Succeed())
		code, out, _ := agent("ensure", "file", f, "--content", "y\n", "--owner", "root", "--group", "root", "--mode", "0644", "--noop", "--diff", "--diff-max-bytes", "64")
		Expect(code).To(Equal(5))
		Expect(out).To(ContainSubstring("\n    content differs (over the 64-byte diff limit): current 200 bytes sha256:"))
	})

	It("keeps a sensitive resource's content out of the output and the JSON", func() {
		f := filepath.Join(dir, "token")
		Expect(os.WriteFile(f, []byte("old-CANARY-1\n"), 0o600)).To(Succeed())
		args := []string{"ensure", "file", f, "--content", "new-CANARY-2\n", "--owner", "root", "--group", "root", "--mode", "0600", "--noop", "--sensitive"}
		code, out, errOut := agent(append(args, "--diff", "--debug")...)
		Expect(code).To(Equal(5))
		Expect(out).To(ContainSubstring("\n    content differs; sensitive\n"))
		code, js, jsErr := agent(append(args, "--json", "--debug")...)
		Expect(code).To(Equal(5))
		Expect(js).To(ContainSubstring(`"content": "[sensitive]"`))
		for _, text := range []string{out, errOut, js, jsErr} {
			Expect(text).NotTo(ContainSubstring("CANARY"))
		}
	})

	It("prints each changed resource's diff as apply goes", func() {
		a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
		Expect(os.WriteFile(a, []byte("one\n"), 0o644)).To(Succeed())
		m := filepath.Join(dir, "m.yaml")
		Expect(os.WriteFile(m, []byte(`data:
  secret: hunter2-CANARY
sensitive_data: [secret]
ccm:
  resources:
    - file:
        - defaults: {owner: root, group: root, mode: "0644"}
        - `+a+`: {content: "two\n"}
        - `+b+`: {content: "pw={{ data.secret }}\n"}
`), 0o644)).To(Succeed())
		code, out, errOut := agent("apply", m, "--noop", "--diff", "--detailed-exit-codes")
		Expect(code).To(Equal(5), errOut)
		Expect(out).To(MatchRegexp(`(?m)^ WARN  file#` + regexp.QuoteMeta(a) + ` changed ensure=present runtime=\d+m?s provider=posix noop=Would have created the file: content differs$`))
		Expect(out).To(ContainSubstring(" noop=Would have created the file: content differs\n" +
			"    --- " + a + " (current)\n" +
			"    +++ " + a + " (desired)\n" +
			"    @@ -1 +1 @@\n" +
			"    -one\n" +
			"    +two\n"))
		Expect(out).To(MatchRegexp(`(?m)^ WARN  file#` + regexp.QuoteMeta(b) + ` changed ensure=present runtime=\d+m?s provider=posix noop=Would have created the file$`))
		Expect(out).To(ContainSubstring(" noop=Would have created the file\n" +
			"    ensure absent → present\n" +
			"    content differs; sensitive\n"))
		Expect(out).NotTo(ContainSubstring("CANARY"))
	})
})
