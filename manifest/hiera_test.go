package manifest_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/manifest"
	"github.com/ccm-fleet/ccm/resources"
)

var _ = Describe("Hiera", func() {
	parse := func(doc string) *manifest.Hiera {
		h, err := manifest.ParseHiera([]byte(doc))
		Expect(err).NotTo(HaveOccurred())
		return h
	}

	It("templates data values over the facts, a single template keeping its type", func() {
		h := parse(`
data:
  cpus: "${ Facts.cpus }"
  greeting: "hello ${ Facts.name }"
  missing: "${ lookup('facts.nope') }"
  nested: {list: ["{{ Facts.name }}"]}
hierarchy: {order: ["name:${ Facts.name }"]}
overrides:
  name:web01: {extra: "${ Facts.cpus > 2 }"}
`)
		res, err := h.Resolve(map[string]any{"cpus": 4.0, "name": "web01"})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Data).To(Equal(map[string]any{
			"cpus": 4.0, "greeting": "hello web01", "missing": "",
			"nested": map[string]any{"list": []any{"web01"}}, "extra": true,
		}))
		Expect(res.Applied).To(Equal([]string{"name:web01"}))
	})

	It("lists the overrides applied in order, and never takes one named data when there is base data", func() {
		h := parse(`
data: {a: base}
hierarchy: {order: ["data", "x:${ Facts.x }", "y:${ Facts.y }"], merge: deep}
overrides:
  data: {a: from-data-override}
  x:1: {b: x}
  y:2: {b: y}
`)
		res, err := h.Resolve(map[string]any{"x": "1", "y": "2"})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Applied).To(Equal([]string{"x:1", "y:2"}))
		Expect(res.Data).To(Equal(map[string]any{"a": "base", "b": "y"}))
	})

	It("does not change its data between resolutions", func() {
		h := parse("data: {l: [a]}\nhierarchy: {order: [r], merge: deep}\noverrides: {r: {l: [b]}}\n")
		for range 3 {
			res, err := h.Resolve(nil)
			Expect(err).NotTo(HaveOccurred())
			Expect(res.Data["l"]).To(Equal([]any{"a", "b"}))
		}
	})

	DescribeTable("refuses what is not a hiera document",
		func(doc, msg string) {
			_, err := manifest.ParseHiera([]byte(doc))
			Expect(err).To(MatchError(resources.ErrInvalid))
			Expect(err.Error()).To(ContainSubstring(msg))
		},
		Entry("a manifest's ccm section", "ccm: {}\n", `hiera: unknown key "ccm"`),
		Entry("an unknown merge", "hierarchy: {order: [a], merge: deeper}\n", `hierarchy.merge`),
		Entry("an order that is not a list", "hierarchy: {order: a}\n", `hierarchy.order`),
		Entry("a YAML anchor", "data: {a: &x 1, b: *x}\n", `YAML anchors are not accepted`),
	)
})
