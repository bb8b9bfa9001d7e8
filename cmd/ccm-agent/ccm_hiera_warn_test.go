package main

import (
	"os"
	"path/filepath"
	"regexp"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// Issue 41 item 12: CCM's hiera page says an annotation it does not
// understand "produce[s] a warning, catching typos like @requiired". Run
// side by side on this document, CCM (bd56277) printed on stderr, exit 0:
//
//	time=... level=WARN msg="Unrecognized annotation in hiera data" key=user annotation=@requiired
var _ = Describe("ccm-agent unknown hiera annotations (issue 41 item 12)", func() {
	const doc = `data:
  # @requiired
  user: bob
  web:
    # @validat isInt(value)
    port: 8080
`
	var dir, input string
	// ccmLine is CCM's line without its time.
	ccmLine := func(key, annotation string) *regexp.Regexp {
		return regexp.MustCompile(`(?m)^time=\S+ level=WARN msg="Unrecognized annotation in hiera data" key=` + regexp.QuoteMeta(key) + ` annotation="?` + regexp.QuoteMeta(annotation) + `"?$`)
	}
	BeforeEach(func() {
		dir = GinkgoT().TempDir()
		input = filepath.Join(dir, "data.yaml")
		Expect(os.WriteFile(input, []byte(doc), 0o644)).To(Succeed())
	})

	It("hiera parse warns on stderr as CCM does, and still prints the data", func() {
		code, out, errOut := agent("hiera", "parse", input)
		Expect(code).To(Equal(0), errOut)
		Expect(out).To(Equal("{\n  \"user\": \"bob\",\n  \"web\": {\n    \"port\": 8080\n  }\n}\n"))
		Expect(errOut).To(MatchRegexp(ccmLine("user", "@requiired").String()))
		Expect(errOut).To(MatchRegexp(ccmLine("web.port", "@validat isInt(value)").String()))
	})

	It("--log-level error silences it", func() {
		code, _, errOut := agent("hiera", "parse", input, "--log-level", "error")
		Expect(code).To(Equal(0), errOut)
		Expect(errOut).To(BeEmpty())
	})

	It("ensure --hiera and apply --hiera warn the same way", func() {
		target := filepath.Join(dir, "motd")
		code, _, errOut := agent("ensure", "file", target, "--content", "{{ lookup('data.user') }}", "--hiera", input, "--owner", "root", "--group", "root", "--mode", "0644")
		Expect(code).To(Equal(0), errOut)
		Expect(os.ReadFile(target)).To(Equal([]byte("bob")))
		Expect(errOut).To(MatchRegexp(ccmLine("user", "@requiired").String()))

		m := filepath.Join(dir, "m.yaml")
		Expect(os.WriteFile(m, []byte("data:\n  # @requird\n  x: 1\nccm:\n  resources: []\n"), 0o644)).To(Succeed())
		code, _, errOut = agent("apply", m, "--hiera", input)
		Expect(code).To(Equal(0), errOut)
		Expect(errOut).To(MatchRegexp(ccmLine("user", "@requiired").String()))
		Expect(errOut).To(MatchRegexp(ccmLine("x", "@requird").String()))
	})
})
