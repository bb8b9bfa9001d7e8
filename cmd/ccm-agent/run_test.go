package main

import (
	"os"
	"path/filepath"

	"github.com/nats-io/nkeys"
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

	DescribeTable("exits 1 before connecting on a policy whose scopes cannot parse or never decide, naming the rule",
		func(scopes, want string) {
			dir := GinkgoT().TempDir()
			kp, err := nkeys.CreateUser()
			Expect(err).ToNot(HaveOccurred())
			pub, err := kp.PublicKey()
			Expect(err).ToNot(HaveOccurred())
			policy := filepath.Join(dir, "policy.yaml")
			Expect(os.WriteFile(policy, []byte("signers:\n  - name: web\n    public_key: "+pub+"\n    allow: [exec, file]\n"+scopes), 0o644)).To(Succeed())
			code, _, errOut := agent("run", "--policy", policy, "--state-dir", dir, "--server", "nats://127.0.0.1:1")
			Expect(code).To(Equal(1))
			Expect(errOut).To(ContainSubstring("policy " + policy + ": " + want))
			Expect(errOut).ToNot(ContainSubstring("connect"))
		},
		Entry("a hosts filter that does not parse", "    hosts: [\"role\"]\n", "signers[0] web: hosts:"),
		Entry("a relative command", "    exec:\n      commands: [\"nginx -s reload\"]\n", `signers[0] web: exec.commands[0] "nginx -s reload": the executable must be an absolute path`),
		Entry("a scope for a type the signer is not allowed", "    service:\n      names: [nginx]\n", "signers[0] web: service: the signer is not allowed service, so the rule can never apply"),
		Entry("an allow a deny fully shadows", "    file:\n      paths: [/etc/nginx/conf.d]\n    deny:\n      file:\n        paths: [/etc/nginx]\n",
			`signers[0] web: file.paths[0] "/etc/nginx/conf.d": everything it allows is denied by deny.file.paths[0] "/etc/nginx"`),
		Entry("an unknown key in a scope", "    file:\n      path: [/etc]\n", `signers[0].file: unknown key "path"`),
	)

	It("documents the security flags in --help", func() {
		_, out, _ := agent("run", "--help")
		Expect(out).To(ContainSubstring("--policy=FILE"))
		Expect(out).To(ContainSubstring("--[no-]insecure"))
		Expect(out).To(ContainSubstring("--audit-log=FILE"))
	})
})
