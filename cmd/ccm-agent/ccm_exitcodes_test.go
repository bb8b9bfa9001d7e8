package main

import (
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// CCM's apply exits 0 once the manifest ran, whatever its resources did
// (run side by side with CCM bd56277: a failed exec, a noop with changes,
// --monitor-only with a CRITICAL check all exit 0). ccm-agent apply does the
// same by default; --detailed-exit-codes gives ccm-orch's numbers.
var _ = Describe("ccm-agent apply exit codes", func() {
	var dir, m string
	BeforeEach(func() {
		dir = GinkgoT().TempDir()
		m = filepath.Join(dir, "manifest.yaml")
	})
	write := func(doc string) {
		Expect(os.WriteFile(m, []byte(doc), 0o644)).To(Succeed())
	}

	It("exits 0 after a failed resource as CCM does, 2 with --detailed-exit-codes", func() {
		write("ccm:\n  resources:\n    - exec:\n        - /bin/false: {}\n")
		code, out, _ := agent("apply", m)
		Expect(out).To(ContainSubstring("exec#/bin/false failed"))
		Expect(code).To(Equal(0))

		code, _, _ = agent("apply", m, "--detailed-exit-codes")
		Expect(code).To(Equal(2))
	})

	It("exits 0 under --noop with changes as CCM does, 5 with --detailed-exit-codes", func() {
		f := filepath.Join(dir, "f")
		write("ccm:\n  resources:\n    - file:\n        - " + f + ": {content: x, owner: root, group: root, mode: \"0644\"}\n")
		code, out, _ := agent("apply", m, "--noop")
		Expect(out).To(ContainSubstring("would change"))
		Expect(code).To(Equal(0))

		code, _, _ = agent("apply", m, "--noop", "--detailed-exit-codes")
		Expect(code).To(Equal(5))
		Expect(f).ToNot(BeAnExistingFile())
	})

	It("exits 0 under --monitor-only with a CRITICAL check as CCM does, 2 with --detailed-exit-codes", func() {
		write("ccm:\n  resources:\n    - exec:\n        - /bin/true:\n            health_checks:\n              - command: \"/bin/sh -c 'exit 2'\"\n")
		code, out, _ := agent("apply", m, "--monitor-only")
		Expect(out).To(ContainSubstring("CRITICAL"))
		Expect(code).To(Equal(0))

		code, _, _ = agent("apply", m, "--monitor-only", "--detailed-exit-codes")
		Expect(code).To(Equal(2))
	})

	It("still exits 1 for a manifest that cannot run, with or without the flag", func() {
		write("ccm:\n  resources:\n    - exec:\n        - /bin/true: {nope: 1}\n")
		code, _, errOut := agent("apply", m)
		Expect(code).To(Equal(1))
		Expect(errOut).To(ContainSubstring("nope"))
		code, _, _ = agent("apply", m, "--detailed-exit-codes")
		Expect(code).To(Equal(1))
	})
})
