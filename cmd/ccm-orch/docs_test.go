package main

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("ccm-orch man and completion", func() {
	It("renders the manual page from the commands and flags ccm-orch has", func() {
		code, out, errOut := orch("man")
		Expect(code).To(Equal(0), errOut)
		Expect(out).To(HavePrefix(`.TH "CCM\-ORCH" 1 "unknown" "ccm\-fleet development" "CCM Fleet Manual"` + "\n.SH NAME\nccm\\-orch \\- CCM Fleet orchestrator\n"))
		for _, section := range []string{"SYNOPSIS", "DESCRIPTION", "OPTIONS", "COMMANDS", "SEE ALSO"} {
			Expect(out).To(ContainSubstring("\n.SH " + section + "\n"))
		}
		Expect(out).To(ContainSubstring(`.SS "ensure file `))
		Expect(out).To(ContainSubstring(`.SS "history show `))
		Expect(out).To(ContainSubstring(`.B "\-W, \-\-where=FILTER"`))
		Expect(out).NotTo(MatchRegexp(`\.SS "man[ "]`), "the man command is hidden (manifest is another command)")
		for _, line := range strings.Split(out, "\n") {
			Expect(line).NotTo(MatchRegexp(`^'`), "a line that roff would take for a request")
			if strings.HasPrefix(line, ".") {
				Expect(line).To(MatchRegexp(`^\.(TH|SH|SS|TP|PP|B|BR|I) `+"|^\\.(PP|TP)$"), "a roff request the page means")
			}
		}
	})

	DescribeTable("prints the completion script of each shell",
		func(shell, want string) {
			code, out, errOut := orch("completion", shell)
			Expect(code).To(Equal(0), errOut)
			Expect(out).To(ContainSubstring(want))
		},
		Entry("bash", "bash", "complete -F _ccm-orch_bash_autocomplete -o default ccm-orch"),
		Entry("zsh", "zsh", "#compdef ccm-orch"),
		Entry("fish", "fish", "complete -c ccm-orch -f -a '(__ccm_orch_complete)'"),
	)

	It("refuses a shell it has no script for, naming those it has", func() {
		code, out, errOut := orch("completion", "tcsh")
		Expect(code).To(Equal(1))
		Expect(out).To(BeEmpty())
		Expect(errOut).To(ContainSubstring("bash"))
		Expect(errOut).To(ContainSubstring("fish"))
	})
})
