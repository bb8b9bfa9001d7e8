package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// agent runs the CLI in-process and returns exit code, stdout and stderr.
func agent(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

var _ = Describe("ccm-agent ensure", func() {
	var dir string
	BeforeEach(func() {
		dir = GinkgoT().TempDir()
		Expect(os.Mkdir(filepath.Join(dir, "x"), 0o755)).To(Succeed())
	})

	It("creates a file, then is stable, then reports drift under noop without touching it", func() {
		motd := filepath.Join(dir, "x", "motd")
		args := []string{"ensure", "file", motd, "present", "--content", "hi", "--owner", "root", "--group", "root", "--mode", "0644"}

		code, out, _ := agent(args...)
		Expect(code).To(Equal(0))
		Expect(out).To(ContainSubstring("file#" + motd + " changed"))
		Expect(os.ReadFile(motd)).To(Equal([]byte("hi")))

		code, out, _ = agent(append(args, "--json")...)
		Expect(code).To(Equal(0))
		var resp map[string]any
		Expect(json.Unmarshal([]byte(out), &resp)).To(Succeed())
		Expect(resp["protocol"]).To(Equal("io.choria.ccm.v1.resource.ensure.response"))
		Expect(resp["state"]).To(HaveKeyWithValue("changed", false))

		// "644" converges with "0644"
		code, out, _ = agent("ensure", "file", motd, "--content", "hi", "--owner", "root", "--group", "root", "--mode", "644")
		Expect(code).To(Equal(0))
		Expect(out).To(ContainSubstring("stable"))

		before, _ := os.Stat(motd)
		code, out, _ = agent("ensure", "file", motd, "--content", "bye", "--owner", "root", "--group", "root", "--mode", "0644", "--noop")
		Expect(code).To(Equal(5))
		Expect(out).To(ContainSubstring("would change: Would have created the file"))
		Expect(os.ReadFile(motd)).To(Equal([]byte("hi")))
		after, _ := os.Stat(motd)
		Expect(after.ModTime()).To(Equal(before.ModTime()))
	})

	It("runs an exec once and then reports it stable", func() {
		flag := filepath.Join(dir, "x", "flag")
		code, out, _ := agent("ensure", "exec", "/bin/touch "+flag, "--creates", flag)
		Expect(code).To(Equal(0))
		Expect(out).To(ContainSubstring("changed"))
		Expect(flag).To(BeAnExistingFile())
		code, out, _ = agent("ensure", "exec", "/bin/touch "+flag, "--creates", flag)
		Expect(code).To(Equal(0))
		Expect(out).To(ContainSubstring("stable"))
	})

	It("exits 2 when the resource fails", func() {
		code, out, _ := agent("ensure", "exec", "/bin/false")
		Expect(code).To(Equal(2))
		Expect(out).To(ContainSubstring("exec#/bin/false failed: "))
		Expect(out).To(ContainSubstring("exit code 1 is not one of [0]"))
	})

	It("skips a resource whose control condition is false", func() {
		flag := filepath.Join(dir, "x", "never")
		code, out, _ := agent("ensure", "exec", "/bin/touch "+flag, "--if", "facts.os == 'plan9'")
		Expect(code).To(Equal(0))
		Expect(out).To(ContainSubstring("skipped"))
		Expect(flag).ToNot(BeAnExistingFile())
	})

	DescribeTable("refuses bad input with one line naming the problem, exit 1, and changes nothing",
		func(problem string, args ...string) {
			entries, _ := os.ReadDir(filepath.Join(dir, "x"))
			code, out, errOut := agent(args...)
			Expect(code).To(Equal(1))
			Expect(out).To(BeEmpty())
			Expect(strings.Count(strings.TrimSpace(errOut), "\n")).To(Equal(0), "one line: %q", errOut)
			Expect(errOut).To(ContainSubstring(problem))
			after, _ := os.ReadDir(filepath.Join(dir, "x"))
			Expect(after).To(HaveLen(len(entries)))
		},
		Entry("relative path", `is not an absolute path`, "ensure", "file", "x/motd", "--content", "a", "--owner", "root", "--group", "root", "--mode", "0644"),
		Entry("mode 0888", `property mode: "0888"`, "ensure", "file", "/tmp/ccm-never/motd", "--content", "a", "--owner", "root", "--group", "root", "--mode", "0888"),
		Entry("unbalanced quotes", `Unterminated single-quoted string`, "ensure", "exec", "/bin/touch '/tmp/ccm-never"),
		Entry("unknown provider", `unknown provider "bash"`, "ensure", "exec", "/bin/true", "--provider", "bash"),
		Entry("template error", `missing key`, "ensure", "file", "/tmp/ccm-never", "--content", "{{ lookup('facts.nope') }}", "--owner", "root", "--group", "root", "--mode", "0644"),
		Entry("unknown flag", `unknown long flag '--colour'`, "ensure", "file", "/tmp/ccm-never", "--colour", "red"),
		Entry("conflicting switches", `--enable and --disable cannot be used together`, "ensure", "service", "nginx", "--enable", "--disable"),
		Entry("injection in a package name", `package`, "ensure", "package", "nginx;rm -rf /"),
	)

	It("answers --json with the error document on bad input", func() {
		code, out, _ := agent("ensure", "file", "relative", "--json")
		Expect(code).To(Equal(1))
		var resp map[string]any
		Expect(json.Unmarshal([]byte(out), &resp)).To(Succeed())
		Expect(resp).To(HaveKey("error"))
		Expect(resp).ToNot(HaveKey("state"))
	})
})

var _ = Describe("ccm-agent facts", func() {
	It("prints one fact by path", func() {
		code, out, _ := agent("facts", "os", "--fact", "os=custom")
		Expect(code).To(Equal(0))
		Expect(strings.TrimSpace(out)).To(Equal(`"custom"`), "a query prints JSON, as CCM's facts does")
	})

	It("prints all facts as JSON", func() {
		code, out, _ := agent("facts", "--json", "--identity", "node1")
		Expect(code).To(Equal(0))
		var f map[string]any
		Expect(json.Unmarshal([]byte(out), &f)).To(Succeed())
		Expect(f).To(HaveKeyWithValue("identity", "node1"))
	})

	It("fails on an unknown fact path", func() {
		code, _, errOut := agent("facts", "nope.nothing")
		Expect(code).To(Equal(1))
		Expect(errOut).To(ContainSubstring(`no fact at "nope.nothing"`))
	})
})

var _ = Describe("ccm-agent --help", func() {
	It("prints the usage once and exits 0", func() {
		code, out, _ := agent("--help")
		Expect(code).To(Equal(0))
		Expect(strings.Count(out, "usage: ccm-agent")).To(Equal(1))
		Expect(out).To(ContainSubstring("simulate"))
	})
})
