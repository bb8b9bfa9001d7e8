package main

import (
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// CCM bd56277's "ccm apply --render" prints the manifest as
// ccm: {fail_on_error, resources: [{TYPE: {name, ensure, ...}}]} then
// data:, sequences not indented below their key, and an empty line at the
// end. ccm-agent prints the same shape, with the templates expanded.
var _ = Describe("ccm-agent apply --render in CCM's shape", func() {
	It("prints ccm (fail_on_error, messages, resources by type) then data", func() {
		dir := GinkgoT().TempDir()
		m := filepath.Join(dir, "manifest.yaml")
		out := filepath.Join(dir, "r-out")
		Expect(os.WriteFile(m, []byte(`data:
  msg: hello
ccm:
  pre_message: pre
  resources:
    - file:
        - `+out+`:
            ensure: present
            content: "{{ lookup('data.msg') }}"
            owner: root
            group: root
            mode: "0644"
    - exec:
        - /bin/true:
            timeout: 10s
`), 0o644)).To(Succeed())
		code, stdout, errOut := agent("apply", m, "--render")
		Expect(code).To(Equal(0), errOut)
		Expect(stdout).To(Equal(`ccm:
  fail_on_error: false
  pre_message: pre
  resources:
  - file:
      name: ` + out + `
      ensure: present
      content: hello
      group: root
      mode: "0644"
      owner: root
  - exec:
      name: /bin/true
      timeout: 10s
data:
  msg: hello

`))
		Expect(out).ToNot(BeAnExistingFile())
	})
})
