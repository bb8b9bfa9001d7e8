package main

import (
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// Command lines CCM's documentation (docs/content/cli, resources,
// registration of choria-io/ccm) gives that ccm-agent does not run as
// CCM does: each ends in one line on stderr that names what to write here
// instead, never in a flag parse error.
var _ = Describe("CCM's documented command lines ccm-agent spells otherwise", func() {
	oneLine := func(errOut string) {
		GinkgoHelper()
		Expect(strings.Count(strings.TrimSpace(errOut), "\n")).To(Equal(0), errOut)
		Expect(errOut).ToNot(ContainSubstring("unknown long flag"))
		Expect(errOut).ToNot(ContainSubstring("unknown command"))
	}

	It("registration create (registration page) names register_when_stable", func() {
		code, out, errOut := agent("registration", "create", "--cluster", "production", "--service", "web", "--protocol", "http", "--address", "10.0.0.5", "--port", "8080", "--priority", "10", "--ttl", "5m", "-A", "version=1.2.3")
		Expect(code).To(Equal(1))
		Expect(out).To(BeEmpty())
		oneLine(errOut)
		Expect(errOut).To(ContainSubstring("register_when_stable"))

		code, _, errOut = agent("reg", "c", "--cluster", "production")
		Expect(code).To(Equal(1))
		oneLine(errOut)
		Expect(errOut).To(ContainSubstring("register_when_stable"))
	})

	It("ensure file ... --registration STREAM (registration page) says registrations() is the agent's", func() {
		dir := GinkgoT().TempDir()
		tpl := filepath.Join(dir, "backends.cfg.templ")
		Expect(os.WriteFile(tpl, []byte("x\n"), 0o644)).To(Succeed())
		f := filepath.Join(dir, "backends.cfg")
		code, _, errOut := agent("ensure", "file", f, "--content-file", tpl, "--registration", "REGISTRATIONS")
		Expect(code).To(Equal(1))
		oneLine(errOut)
		Expect(errOut).To(ContainSubstring("ccm-agent agent"))
		Expect(f).ToNot(BeAnExistingFile())
	})

	It("apply manifest.yaml --registration STREAM (registration page) says the same", func() {
		m := filepath.Join(GinkgoT().TempDir(), "manifest.yaml")
		Expect(os.WriteFile(m, []byte("ccm:\n  resources: []\n"), 0o644)).To(Succeed())
		code, _, errOut := agent("apply", m, "-R", "REGISTRATIONS")
		Expect(code).To(Equal(1))
		oneLine(errOut)
		Expect(errOut).To(ContainSubstring("ccm-agent agent"))
	})

	It("apply --facts FILE (CCM's apply flag) reads the facts file, as --facts-file", func() {
		dir := GinkgoT().TempDir()
		ff := filepath.Join(dir, "facts.yaml")
		Expect(os.WriteFile(ff, []byte("role: from-file\n"), 0o644)).To(Succeed())
		m := filepath.Join(dir, "manifest.yaml")
		f := filepath.Join(dir, "out")
		Expect(os.WriteFile(m, []byte("ccm:\n  resources:\n    - file:\n        - "+f+": {content: \"{{ lookup('facts.role') }}\", owner: root, group: root, mode: \"0644\"}\n"), 0o644)).To(Succeed())
		code, _, errOut := agent("apply", m, "--facts", ff)
		Expect(code).To(Equal(0), errOut)
		Expect(os.ReadFile(f)).To(Equal([]byte("from-file")))
	})

	It("apply --read-env says apply reads no .env, and --no-read-env is what it does", func() {
		m := filepath.Join(GinkgoT().TempDir(), "manifest.yaml")
		Expect(os.WriteFile(m, []byte("ccm:\n  resources: []\n"), 0o644)).To(Succeed())
		code, _, errOut := agent("apply", m, "--read-env")
		Expect(code).To(Equal(1))
		oneLine(errOut)
		Expect(errOut).To(ContainSubstring("ccm-agent ensure"))

		code, _, errOut = agent("apply", m, "--no-read-env")
		Expect(code).To(Equal(0), errOut)
	})

	It("ensure --context NAME (CCM's ensure flag) connects only for kvGet(): a resource that reads no bucket needs no context", func() {
		f := filepath.Join(GinkgoT().TempDir(), "out")
		code, _, errOut := agent("ensure", "--context", "no-such-context", "file", f, "--content", "x")
		Expect(code).To(Equal(0), errOut)
		Expect(os.ReadFile(f)).To(Equal([]byte("x")))
	})
})
