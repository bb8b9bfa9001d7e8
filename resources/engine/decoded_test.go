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

var _ = Describe("ValueMayHoldTemplate", func() {
	DescribeTable("looks at every string of planned properties, keys included",
		func(v any, want bool) {
			Expect(engine.ValueMayHoldTemplate(v)).To(Equal(want))
		},
		Entry("plain values", map[string]any{"name": "a && b <c>", "n": 1, "f": 1.5, "b": true, "nil": nil, "list": []any{"x"}}, false),
		Entry("a {{ template in a list", map[string]any{"list": []any{"{{ facts.x }}"}}, true),
		Entry("a ${ template deep down", map[string]any{"m": map[string]any{"k": []any{map[string]any{"v": "${ x }"}}}}, true),
		Entry("a template in a key (goss rules)", map[string]any{"goss_rules": map[string]any{"{{ facts.x }}": map[string]any{}}}, true),
		Entry("a value of a kind not expected", map[string]any{"m": map[string]string{"k": "v"}}, true),
	)
})

var _ = Describe("CloneProperties", func() {
	It("copies everything, sharing nothing with the original", func() {
		t := &probeType{}
		p, err := engine.DecodeMap(t, map[string]any{"name": "x", "require": []any{"probe#a"},
			"health_checks": []any{map[string]any{"goss_rules": map[string]any{"file": map[string]any{"/x": map[string]any{"exists": true}}}}}})
		Expect(err).ToNot(HaveOccurred())
		c := engine.CloneProperties(p)
		Expect(c).To(Equal(p))
		c.Common().Require[0] = "probe#b"
		c.Common().HealthChecks[0].GossRules["file"].(map[string]any)["/x"] = "changed"
		Expect(p.Common().Require[0]).To(Equal("probe#a"))
		Expect(p.Common().HealthChecks[0].GossRules["file"].(map[string]any)["/x"]).To(Equal(map[string]any{"exists": true}))
	})
})
