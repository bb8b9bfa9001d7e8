package templates

import (
	"regexp"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// templateRe is the regular expression findTemplates writes out.
var templateRe = regexp.MustCompile(`(?s)\{\{\s*(.*?)\s*\}\}`)

var _ = Describe("findTemplates", func() {
	DescribeTable("finds what the regular expression finds",
		func(s string) {
			want := templateRe.FindAllStringSubmatchIndex(s, -1)
			var got [][]int
			for _, t := range findTemplates(s) {
				got = append(got, []int{t.start, t.end, t.exprStart, t.exprEnd})
			}
			Expect(got).To(Equal(want))
			Expect(HasTemplate(s)).To(Equal(templateRe.MatchString(s)))
		},
		Entry("none", "plain"),
		Entry("one", "{{ a }}"),
		Entry("no padding", "{{a}}"),
		Entry("empty", "{{}}"),
		Entry("only spaces", "{{ \t\n }}"),
		Entry("two with text", "x{{ a }}y{{b }}z"),
		Entry("newline inside", "{{ a\nb }}"),
		Entry("three braces open", "{{{ a }}"),
		Entry("three braces close", "{{ a }}}"),
		Entry("nested", "{{ {{ a }} }}"),
		Entry("unclosed", "{{ a"),
		Entry("unopened", "a }}"),
		Entry("closed before opened", "}} {{ a }}"),
		Entry("second unclosed", "{{a}} {{ b"),
		Entry("adjacent", "{{a}}{{b}}"),
		Entry("vertical tab is not padding", "{{\va\v}}"),
		Entry("form feed is padding", "{{\fa\f}}"),
		Entry("single braces", "{ a } {{b} }}"),
	)
})
