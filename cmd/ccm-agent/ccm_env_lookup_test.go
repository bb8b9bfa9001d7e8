package main

import (
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// CCM's CLI page (docs/content/cli/_index.md, "Data in the CLI") spells
// environment lookups lookup("env.MY_ENV_VAR"); here env. is environ.
var _ = Describe("ccm-agent lookup('env.X')", func() {
	It("reads the environment, ./.env included, in ensure and apply", func() {
		dir := GinkgoT().TempDir()
		GinkgoT().Chdir(dir)
		GinkgoT().Setenv("CCM_ENV_LOOKUP_CANARY", "env-canary-93e")
		Expect(os.WriteFile(filepath.Join(dir, ".env"), []byte("CCM_DOTENV_LOOKUP=\"dotenv-canary-93e\"\n"), 0o644)).To(Succeed())

		f := filepath.Join(dir, "ensure.out")
		code, _, errOut := agent("ensure", "file", f, "--content", `{{ lookup("env.CCM_ENV_LOOKUP_CANARY") }} ${ lookup("env.CCM_DOTENV_LOOKUP") }`)
		Expect(errOut).To(BeEmpty())
		Expect(code).To(Equal(0))
		Expect(os.ReadFile(f)).To(Equal([]byte("env-canary-93e dotenv-canary-93e")))

		out := filepath.Join(dir, "apply.out")
		site := filepath.Join(dir, "site.yaml")
		Expect(os.WriteFile(site, []byte(`
ccm:
  resources:
    - file:
        - `+out+`: {ensure: present, content: "${ lookup('env.CCM_ENV_LOOKUP_CANARY') } ${ lookup('env.NOPE', 'unset') }", owner: root, group: root, mode: "0644"}
`), 0o644)).To(Succeed())
		code, _, errOut = agent("apply", site)
		Expect(errOut).To(BeEmpty())
		Expect(code).To(Equal(0))
		Expect(os.ReadFile(out)).To(Equal([]byte("env-canary-93e unset")))
	})
})
