package main

import (
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// CCM's run summary (model.SessionSummary.RenderText, printed by "ccm
// apply" unless --report=false): counts by outcome, unmet requirements,
// health checks by status, errors.
var _ = Describe("ccm-agent apply --report", func() {
	It("counts a run of mixed outcomes exactly", func() {
		dir := GinkgoT().TempDir()
		stable, changed, skipped := filepath.Join(dir, "stable"), filepath.Join(dir, "changed"), filepath.Join(dir, "skipped")
		Expect(os.WriteFile(stable, []byte("same\n"), 0o644)).To(Succeed())
		Expect(os.Chmod(stable, 0o644)).To(Succeed())
		m := filepath.Join(dir, "m.yaml")
		Expect(os.WriteFile(m, []byte(`ccm:
  resources:
    - file:
        - defaults: {owner: root, group: root, mode: "0644"}
        - "`+stable+`": {content: "same\n"}
        - "`+changed+`":
            content: "new\n"
            health_checks:
              - goss_rules: {file: {"`+changed+`": {exists: true}}}
    - exec:
        - /bin/false: {}
        - /bin/true:
            health_checks:
              - command: "/bin/sh -c 'exit 2'"
    - file:
        - "`+skipped+`": {content: "x\n", owner: root, group: root, mode: "0644", require: ["exec#/bin/false"]}
`), 0o644)).To(Succeed())

		code, out, errOut := agent("apply", m)
		Expect(code).To(Equal(0), out+errOut)
		Expect(out).To(MatchRegexp(`\nManifest Run Summary\n\n             Run Time: [0-9.]+m?s\n`))
		Expect(out).To(HaveSuffix(`      Total Resources: 5
     Stable Resources: 1
    Changed Resources: 1
     Failed Resources: 2
    Skipped Resources: 1
  Refreshed Resources: 0
   Unmet Requirements: 1
    Checked Resources: 2 (ok: 1, critical: 1, warning: 0 unknown: 0)
         Total Errors: 2
`))

		code, out, _ = agent("apply", m, "--no-report")
		Expect(code).To(Equal(0))
		Expect(out).ToNot(ContainSubstring("Manifest Run Summary"))
	})
})
