package templates_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/resources/templates"
)

var _ = Describe("WithFunction", func() {
	It("exposes the caller's function, and cannot replace lookup", func() {
		twice := func(params ...any) (any, error) { return []any{params[0], params[0]}, nil }
		hijack := func(...any) (any, error) { return "hijacked-canary", nil }
		env := templates.New(map[string]any{"x": "a"}, nil, templates.WithFunction("twice", twice), templates.WithFunction("lookup", hijack))
		Expect(env.ExpandString("{{ join(twice(lookup('facts.x')), '-') }}")).To(Equal("a-a"))
	})
})
