package main

import (
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("ccm-agent run --policy", func() {
	It("exits 1 naming the problem when the policy does not load, before connecting", func() {
		dir := GinkgoT().TempDir()
		policy := filepath.Join(dir, "policy.yaml")
		Expect(os.WriteFile(policy, []byte("signers:\n  - name: ops\n    public_key: UNOTAKEY\n    allow: [file]\n"), 0o644)).To(Succeed())
		code, _, errOut := agent("run", "--policy", policy, "--state-dir", dir, "--server", "nats://127.0.0.1:1")
		Expect(code).To(Equal(1))
		Expect(errOut).To(ContainSubstring("signers[0] ops: public_key"))
		Expect(errOut).ToNot(ContainSubstring("connect"))

		Expect(os.WriteFile(policy, []byte("signers: []\nextra: 1\n"), 0o644)).To(Succeed())
		code, _, errOut = agent("simulate", "--count", "1", "--policy", policy, "--state-dir", dir, "--server", "nats://127.0.0.1:1")
		Expect(code).To(Equal(1))
		Expect(errOut).To(ContainSubstring(`unknown key "extra"`))
	})

	It("documents the security flags in --help", func() {
		_, out, _ := agent("run", "--help")
		Expect(out).To(ContainSubstring("--policy=FILE"))
		Expect(out).To(ContainSubstring("--[no-]insecure"))
		Expect(out).To(ContainSubstring("--audit-log=FILE"))
	})
})
