package resflags_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/cmd/internal/resflags"
	"github.com/ccm-fleet/ccm/resources/catalog"
)

var _ = Describe("The flag table", func() {
	It("is the catalog's command lines, in CCM's order", func() {
		var types []string
		for _, t := range resflags.Table {
			types = append(types, t.Type)
			e, ok := catalog.Lookup(t.Type)
			Expect(ok).To(BeTrue(), t.Type)
			Expect(t.Flags).To(Equal(e.Command.Flags), t.Type)
			Expect(t.Subscribe).To(Equal(e.Refreshes), t.Type)
		}
		Expect(types).To(Equal([]string{"file", "exec", "package", "service", "archive", "scaffold", "user", "group"}))
	})

	It("says which types status reads and which it says it cannot, as CCM does", func() {
		Expect(resflags.StatusTypes(resflags.StatusRead)).To(Equal([]string{"file", "package", "service", "user", "group"}))
		Expect(resflags.StatusTypes(resflags.StatusUnsupported)).To(Equal([]string{"exec", "archive"}))
	})

	It("gives --subscribe to the types a refresh acts on", func() {
		var subscribe []string
		for _, t := range resflags.Table {
			if t.Subscribe {
				subscribe = append(subscribe, t.Type)
			}
		}
		Expect(subscribe).To(Equal([]string{"exec", "service"}))
	})
})
