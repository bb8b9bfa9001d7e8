package main

import (
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// CCM bd56277, run side by side on this manifest, printed "Total
// Resources: 1" and "Skipped Resources: 0": the resources fail_on_error
// leaves unapplied are not counted. ccm-agent counts the same and still
// names each of them on a line of its own.
var _ = Describe("ccm-agent apply with fail_on_error counts as CCM does", func() {
	It("counts only the resources that ran", func() {
		dir := GinkgoT().TempDir()
		m := filepath.Join(dir, "manifest.yaml")
		after := filepath.Join(dir, "after")
		Expect(os.WriteFile(m, []byte(`ccm:
  fail_on_error: true
  resources:
    - exec:
        - /bin/false: {}
    - file:
        - `+after+`: {ensure: present, content: x, owner: root, group: root, mode: "0644"}
`), 0o644)).To(Succeed())
		code, out, errOut := agent("apply", m)
		Expect(code).To(Equal(0), errOut)
		Expect(after).ToNot(BeAnExistingFile())
		Expect(out).To(ContainSubstring(" WARN  file#" + after + " not applied: fail_on_error is set and exec#/bin/false failed\n"))
		Expect(out).To(MatchRegexp(`\n1 resources: 0 stable, 0 changed, 1 failed, 0 skipped, 0 refreshed in \d+ms; 1 not applied\n`))
		Expect(out).To(HaveSuffix(`      Total Resources: 1
     Stable Resources: 0
    Changed Resources: 0
     Failed Resources: 1
    Skipped Resources: 0
  Refreshed Resources: 0
   Unmet Requirements: 0
    Checked Resources: 0
         Total Errors: 1
`))
	})
})
