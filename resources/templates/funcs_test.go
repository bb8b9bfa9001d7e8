package templates_test

import (
	"strings"
	"text/template"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/resources/templates"
)

var _ = Describe("WithFunction", func() {
	twice := func(params ...any) (any, error) { return []any{params[0], params[0]}, nil }
	hijack := func(...any) (any, error) { return "hijacked-canary", nil }

	It("exposes the caller's function, and cannot replace lookup", func() {
		env := templates.New(map[string]any{"x": "a"}, nil, templates.WithFunction("twice", twice), templates.WithFunction("lookup", hijack))
		Expect(env.ExpandString("{{ join(twice(lookup('facts.x')), '-') }}")).To(Equal("a-a"))
	})

	It("exposes it to jet() and to Go templates too, never in place of what New defines", func() {
		env := templates.New(map[string]any{"x": "a"}, nil, templates.WithFunction("twice", twice), templates.WithFunction("lookup", hijack))
		Expect(env.ExpandString(`{{ jet('[[ range _, v := twice(lookup("facts.x")) ]][[ v ]];[[ end ]]') }}`)).To(Equal("a;a;"))
		Expect(env.GoCallerFuncs()).To(HaveLen(1))
		Expect(env.JetCallerFuncs()).To(HaveLen(1))
		tpl := template.Must(template.New("t").Funcs(env.GoCallerFuncs()).Parse(`{{ range $v := twice "b" }}{{ $v }};{{ end }}`))
		var out strings.Builder
		Expect(tpl.Execute(&out, nil)).To(Succeed())
		Expect(out.String()).To(Equal("b;b;"))

		again := templates.New(nil, map[string]any{"y": 1}, env.FunctionOptions()...)
		Expect(again.ExpandString("{{ twice('c')[1] }}")).To(Equal("c"))
	})
})
