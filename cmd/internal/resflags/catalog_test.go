package resflags_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/cmd/internal/resflags"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/catalog"
)

var _ = Describe("The flag table", func() {
	It("names only catalog types, and each flag a property its type declares", func() {
		for _, t := range resflags.Table {
			e, ok := catalog.Lookup(t.Type)
			Expect(ok).To(BeTrue(), "type %s is not in the resource catalog", t.Type)
			keys := resources.PropertyKeys(e.Type).Names()
			for _, f := range t.Flags {
				Expect(keys).To(ContainElement(f.Property), "--%s of %s", f.Name, t.Type)
			}
		}
	})

	It("says which types status reads and which it says it cannot, as CCM does", func() {
		Expect(resflags.StatusTypes(resflags.StatusRead)).To(Equal([]string{"file", "package", "service"}))
		Expect(resflags.StatusTypes(resflags.StatusUnsupported)).To(Equal([]string{"exec", "archive"}))
	})
})
