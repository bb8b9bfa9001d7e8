package main

import (
	"os"
	"path/filepath"
	"regexp"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// CCM bd56277's apply prints one line per resource as its logger writes
// them: " LEVEL REF OUTCOME ensure=E runtime=D provider=P" with noop=,
// errors= and unmet= when they apply, INFO for stable, WARN for changed,
// refreshed and skipped, ERROR for failed and unmet requirements.
var _ = Describe("ccm-agent apply's per-resource lines as CCM prints them", func() {
	var dir, m, f string
	BeforeEach(func() {
		dir = GinkgoT().TempDir()
		m = filepath.Join(dir, "manifest.yaml")
		f = filepath.Join(dir, "out")
	})
	q := regexp.QuoteMeta

	It("prints changed, stable and noop lines", func() {
		Expect(os.WriteFile(m, []byte("ccm:\n  resources:\n    - file:\n        - "+f+": {ensure: present, content: x, owner: root, group: root, mode: \"0644\"}\n    - exec:\n        - /bin/true: {}\n"), 0o644)).To(Succeed())
		code, out, errOut := agent("apply", m, "--noop", "--no-report")
		Expect(code).To(Equal(0), errOut)
		Expect(out).To(HavePrefix(" INFO  Executing manifest manifest=" + m + " resources=2\n"))
		Expect(out).To(MatchRegexp(`(?m)^ WARN  file#` + q(f) + ` changed ensure=present runtime=\d+m?s provider=posix noop=Would have created the file$`))
		Expect(out).To(MatchRegexp(`(?m)^ WARN  exec#/bin/true changed ensure=present runtime=\d+m?s provider=posix noop=Would have executed$`))

		_, out, _ = agent("apply", m, "--no-report")
		Expect(out).To(MatchRegexp(`(?m)^ WARN  file#` + q(f) + ` changed ensure=present runtime=\d+m?s provider=posix$`))

		_, out, _ = agent("apply", m, "--no-report")
		Expect(out).To(MatchRegexp(`(?m)^ INFO  file#` + q(f) + ` stable ensure=present runtime=\d+m?s provider=posix$`))
	})

	It("prints failures, unmet requirements and fail_on_error's stop", func() {
		Expect(os.WriteFile(m, []byte("ccm:\n  resources:\n    - exec:\n        - /bin/false: {}\n        - /bin/true: {require: [exec#/bin/false]}\n"), 0o644)).To(Succeed())
		_, out, _ := agent("apply", m, "--no-report")
		Expect(out).To(MatchRegexp(`(?m)^ ERROR exec#/bin/false failed ensure=present runtime=\d+m?s provider=posix errors=\S.*$`))
		Expect(out).To(MatchRegexp(`(?m)^ ERROR exec#/bin/true skipped due to unmet requirement ensure=present runtime=0s provider= unmet=exec#/bin/false$`))

		Expect(os.WriteFile(m, []byte("ccm:\n  fail_on_error: true\n  resources:\n    - exec:\n        - /bin/false: {}\n        - /bin/true: {}\n"), 0o644)).To(Succeed())
		_, out, _ = agent("apply", m, "--no-report")
		Expect(out).To(MatchRegexp(`(?m)^ ERROR exec#/bin/false failed `))
		Expect(out).To(ContainSubstring("\n WARN  Terminating manifest execution due to failed resource\n"))
		Expect(out).To(ContainSubstring(" WARN  exec#/bin/true not applied: fail_on_error is set and exec#/bin/false failed\n"))
	})

	It("prints the pre message after an empty line, then the Executing line", func() {
		Expect(os.WriteFile(m, []byte("ccm:\n  pre_message: hello\n  resources:\n    - exec:\n        - /bin/true: {}\n"), 0o644)).To(Succeed())
		code, out, errOut := agent("apply", m, "--no-report")
		Expect(code).To(Equal(0), errOut)
		Expect(out).To(HavePrefix("\nhello\n INFO  Executing manifest manifest=" + m + " resources=1\n WARN  exec#/bin/true changed "))
	})
})
