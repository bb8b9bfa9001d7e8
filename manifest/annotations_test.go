package manifest_test

import (
	"encoding/json"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/manifest"
	"github.com/ccm-fleet/ccm/resources"
)

var _ = Describe("data annotations", func() {
	It("travel in a bundle's JSON as data_rules and are enforced where it is unpacked", func() {
		m, err := manifest.Parse([]byte(`
hierarchy: {order: ["env:${ lookup('facts.env') }"]}
data:
  # @require
  # @validate isHostname(value)
  server: ""
overrides:
  env:prod: {server: db.example.net}
  env:test: {server: "bad host!"}
`), manifest.ParseOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(m.Hiera().Rules).To(Equal([]manifest.Rule{{Key: "server", Required: true, Validation: "isHostname(value)"}}))

		b, err := manifest.NewBundle(m)
		Expect(err).NotTo(HaveOccurred())
		wire, err := json.Marshal(b)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(wire)).To(ContainSubstring("data_rules"))
		var got manifest.Bundle
		Expect(json.Unmarshal(wire, &got)).To(Succeed())
		um, err := got.Unpack(filepath.Join(GinkgoT().TempDir(), "run"))
		Expect(err).NotTo(HaveOccurred())

		_, err = um.Resolve(manifest.RunOptions{Facts: map[string]any{"env": "prod"}})
		Expect(err).NotTo(HaveOccurred())
		_, err = um.Resolve(manifest.RunOptions{Facts: map[string]any{"env": "dev"}})
		Expect(err).To(MatchError(manifest.ErrValidation))
		Expect(err.Error()).To(ContainSubstring("data.server is required"))
		_, err = um.Resolve(manifest.RunOptions{Facts: map[string]any{"env": "test"}})
		Expect(err).To(MatchError(ContainSubstring(`data.server ("bad host!") fails @validate isHostname(value)`)))
	})

	It("checks --data too: it is merged before validation, so it can satisfy @require", func() {
		m, err := manifest.Parse([]byte("data:\n  # @require\n  token: \"\"\n"), manifest.ParseOptions{})
		Expect(err).NotTo(HaveOccurred())
		_, err = m.Resolve(manifest.RunOptions{})
		Expect(err).To(MatchError(resources.ErrInvalid))
		_, err = m.Resolve(manifest.RunOptions{Data: map[string]any{"token": "t0k"}})
		Expect(err).NotTo(HaveOccurred())
	})

	DescribeTable("refuses bad rules when parsing",
		func(doc, msg string) {
			_, err := manifest.Parse([]byte(doc), manifest.ParseOptions{})
			Expect(err).To(MatchError(resources.ErrInvalid))
			Expect(err.Error()).To(ContainSubstring(msg))
		},
		Entry("a @validate that does not compile", "data:\n  # @validate isIP(value\n  a: 1\n", `data.a: @validate "isIP(value"`),
		Entry("an unknown function", "data:\n  # @validate isColour(value)\n  a: 1\n", `data.a: @validate "isColour(value)"`),
		Entry("data_rules with an unknown key", `{"data_rules": {"a": {"required": true}}}`, `unknown key "required"`),
		Entry("data_rules with a bad key", `{"data_rules": {"a..b": {"require": true}}}`, `not a dotted data key`),
	)
})
