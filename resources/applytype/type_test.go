package applytype_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/providers"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/applytype"
	"github.com/ccm-fleet/ccm/resources/engine"
	"github.com/ccm-fleet/ccm/resources/templates"
)

// CCM's apply page (docs/content/resources/apply.md): only present is
// valid and is the default; the resource is manifest-only.
var _ = Describe("apply properties", func() {
	DescribeTable("validate",
		func(ensure, name, problem string) {
			p := &applytype.Properties{}
			p.Name, p.Ensure = name, ensure
			err := p.Validate()
			if problem == "" {
				Expect(err).ToNot(HaveOccurred())
				Expect(p.Ensure).To(Equal("present"))
				return
			}
			Expect(err).To(MatchError(resources.ErrInvalid))
			Expect(err.Error()).To(ContainSubstring(problem))
		},
		Entry("ensure defaults to present", "", "app/manifest.yaml", ""),
		Entry("present", "present", "app/manifest.yaml", ""),
		Entry("absent is not an apply ensure value", "absent", "app/manifest.yaml", `property ensure: "absent" is not present`),
		Entry("a name is required", "", "", "property name is required"),
	)

	It("allows nested applies unless allow_apply is false", func() {
		p := &applytype.Properties{}
		Expect(p.NestedAllowed()).To(BeTrue())
		no := false
		p.AllowApply = &no
		Expect(p.NestedAllowed()).To(BeFalse())
	})

	It("resolves the child path against the parent's directory unless absolute", func() {
		Expect(applytype.ChildPath("sub/manifest.yaml", "/opt/ccm")).To(Equal("/opt/ccm/sub/manifest.yaml"))
		Expect(applytype.ChildPath("/srv/m.yaml", "/opt/ccm")).To(Equal("/srv/m.yaml"))
	})

	It("fails outside a manifest, saying it is manifest-only, and changes nothing", func() {
		reg, err := providers.Builtin(providers.Options{})
		Expect(err).ToNot(HaveOccurred())
		ev, err := engine.New(reg).Ensure(GinkgoT().Context(), engine.RunOptions{Env: templates.New(nil, nil)},
			engine.Spec{Type: "apply", Properties: map[string]any{"name": "app/manifest.yaml"}})
		Expect(err).ToNot(HaveOccurred())
		Expect(ev.Failed).To(BeTrue())
		Expect(ev.Changed).To(BeFalse())
		Expect(ev.Errors).To(ContainElement(ContainSubstring(applytype.ErrManifestOnly.Error())))
	})
})
