package main

import (
	"os"
	"path/filepath"
	"regexp"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// Sessions as CCM's CLI page shows them (docs/content/cli/_index.md,
// "Managing multiple resources"): session new prints the export line,
// ensure lines record into the session, --require skips a resource whose
// requirement failed, --subscribe refreshes when the subscribed resource
// changed, and session report summarises.
var _ = Describe("ccm-agent session", func() {
	var dir, store string
	BeforeEach(func() {
		dir = GinkgoT().TempDir()
		store = filepath.Join(dir, "session")
	})

	It("carries --require and --subscribe across separate command lines", func() {
		code, out, _ := agent("session", "new", "--directory", store)
		Expect(code).To(Equal(0))
		Expect(out).To(Equal("export CCM_SESSION_STORE=" + store + "\n"))
		GinkgoT().Setenv("CCM_SESSION_STORE", store)

		code, _, _ = agent("ensure", "exec", "/bin/false")
		Expect(code).To(Equal(2))

		guarded := filepath.Join(dir, "guarded")
		code, out, _ = agent("ensure", "file", guarded, "--content", "session-canary-91", "--require", "exec#/bin/false")
		Expect(code).To(Equal(0))
		Expect(out).To(ContainSubstring("skipped"))
		Expect(guarded).ToNot(BeAnExistingFile())

		conf := filepath.Join(dir, "conf")
		code, _, _ = agent("ensure", "file", conf, "--content", "v1")
		Expect(code).To(Equal(0))
		code, _, _ = agent("ensure", "file", guarded, "--content", "ok", "--require", "file#"+conf)
		Expect(code).To(Equal(0))
		Expect(guarded).To(BeAnExistingFile())

		marker := filepath.Join(dir, "refreshed")
		code, _, _ = agent("ensure", "exec", "/bin/touch "+marker, "--refreshonly", "--subscribe", "file#"+conf)
		Expect(code).To(Equal(0))
		Expect(marker).To(BeAnExistingFile(), "conf changed in this session: refreshed")

		Expect(os.Remove(marker)).To(Succeed())
		code, out, _ = agent("ensure", "file", conf, "--content", "v1")
		Expect(code).To(Equal(0))
		Expect(out).To(ContainSubstring("stable"))
		code, _, _ = agent("ensure", "exec", "/bin/touch "+marker, "--refreshonly", "-S", "file#"+conf)
		Expect(code).To(Equal(0))
		Expect(marker).ToNot(BeAnExistingFile(), "conf's last event is stable: no refresh")

		code, out, _ = agent("session", "report")
		Expect(code).To(Equal(0))
		Expect(out).To(ContainSubstring("      Total Resources: 7\n"))
		Expect(out).To(ContainSubstring("     Unique Resources: 4\n"))
		Expect(out).To(ContainSubstring("     Failed Resources: 1\n"))
		Expect(out).To(ContainSubstring("    Skipped Resources: 1\n"))
		Expect(out).To(ContainSubstring("         Total Errors: 1\n"))
	})

	// CCM's session report (cmd/session.go of the CCM snapshot) prints
	// these lines in this order, no --json or --yaml, Run Time only when
	// above zero; ours adds the run summary's (model RenderText) unmet
	// requirements and health checks by status, which CCM's session
	// summary counts but does not print (issue 41).
	It("reports an unmet requirement and a WARNING health check in CCM's session report, with the run summary's unmet-requirement and health-check counters", func() {
		GinkgoT().Setenv("CCM_SESSION_STORE", store)
		code, _, _ := agent("session", "new", "--directory", store)
		Expect(code).To(Equal(0))
		code, _, _ = agent("ensure", "exec", "/bin/false")
		Expect(code).To(Equal(2))
		guarded := filepath.Join(dir, "guarded")
		code, out, _ := agent("ensure", "file", guarded, "--content", "x", "--require", "exec#/bin/false")
		Expect(code).To(Equal(0))
		Expect(out).To(ContainSubstring("skipped"))
		code, out, _ = agent("ensure", "exec", "/bin/true", "--check", "/bin/false", "--check-tries", "1")
		Expect(code).To(Equal(2))
		Expect(out).To(ContainSubstring("WARNING"))

		code, out, _ = agent("session", "report")
		Expect(code).To(Equal(0))
		Expect(out).To(MatchRegexp(`\n             Run Time: \d.*\n`))
		Expect(regexp.MustCompile(`(?m)^ +Run Time: .*\n`).ReplaceAllString(out, "")).To(Equal(`
Session Summary

      Total Resources: 3
     Unique Resources: 3
     Stable Resources: 0
    Changed Resources: 0
     Failed Resources: 2
    Skipped Resources: 1
  Refreshed Resources: 0
   Unmet Requirements: 1
    Checked Resources: 1 (ok: 0, critical: 0, warning: 1 unknown: 0)
         Total Errors: 2
`))
		code, _, errOut := agent("session", "report", "--json")
		Expect(code).To(Equal(1), "CCM's session report has no --json")
		Expect(errOut).To(ContainSubstring("--json"))
	})

	It("refuses --require without a session, and a requirement the session has no event of", func() {
		GinkgoT().Setenv("CCM_SESSION_STORE", "")
		f := filepath.Join(dir, "f")
		code, _, errOut := agent("ensure", "file", f, "--content", "x", "--require", "exec#/bin/true")
		Expect(code).To(Equal(1))
		Expect(errOut).To(ContainSubstring("need a session"))
		Expect(f).ToNot(BeAnExistingFile())

		code, _, _ = agent("session", "new", "--directory", store)
		Expect(code).To(Equal(0))
		code, _, errOut = agent("ensure", "--session", store, "file", f, "--content", "x", "--require", "exec#/bin/true")
		Expect(code).To(Equal(1))
		Expect(errOut).To(ContainSubstring("exec#/bin/true: no events in the session"))
		Expect(f).ToNot(BeAnExistingFile())
	})

	It("session new refuses an existing directory; report --remove removes only inside the temporary directory", func() {
		Expect(os.Mkdir(store, 0o700)).To(Succeed())
		code, _, errOut := agent("session", "new", "--directory", store)
		Expect(code).To(Equal(1))
		Expect(errOut).To(ContainSubstring("already exists"))

		code, out, _ := agent("session", "new")
		Expect(code).To(Equal(0))
		tmp := out[len("export CCM_SESSION_STORE=") : len(out)-1]
		Expect(tmp).To(BeADirectory())
		code, _, _ = agent("session", "report", "--session", tmp, "--remove")
		Expect(code).To(Equal(0))
		Expect(tmp).ToNot(BeAnExistingFile())
	})
})
