package engine_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/resources/engine"
)

var _ = Describe("MayHoldTemplate", func() {
	DescribeTable("reads the escapes of the JSON text, erring on the side of a template",
		func(raw string, want bool) {
			Expect(engine.MayHoldTemplate([]byte(raw))).To(Equal(want))
		},
		Entry("plain text", `{"name":"/bin/true"}`, false),
		Entry("a {{ template", `{"name":"{{ facts.host }}"}`, true),
		Entry("a ${ template", `{"name":"${ facts.host }"}`, true),
		Entry("json.Marshal's & < >", `{"name":"a \u0026\u0026 b \u003c\u003e"}`, false),
		Entry("other escapes", `{"name":"a\"b\\c\n\u00e9\ud83d\ude00"}`, false),
		Entry("an escaped backslash before u", `{"name":"c:\\u007b"}`, false),
		Entry("{{ spelled with escapes", `{"name":"\u007b\u007b facts.host }}"}`, true),
		Entry("{{ half escaped", `{"name":"{\u007B facts.host }}"}`, true),
		Entry("${ with an escaped $", `{"name":"\u0024{ facts.host }"}`, true),
		Entry("${ with an escaped {", `{"name":"$\u007b facts.host }"}`, true),
		Entry("a lone escaped {", `{"name":"a \u007b b"}`, true),
		Entry("an escape cut short", `{"name":"\u00`, true),
		Entry("an escape of no hex", `{"name":"\uzzzz"}`, true),
		Entry("a backslash at the end", `{"name":"\`, true),
	)
})
