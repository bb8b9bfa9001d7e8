package catalog_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/resources/catalog"
)

var _ = Describe("Command line knowledge", func() {
	DescribeTable("reads CCM's positional second argument",
		func(typ, arg string, sets bool, property string) {
			p := catalog.PositionalOf(typ)
			Expect(p.Sets(arg)).To(Equal(sets))
			if property != "" {
				Expect(p.Property).To(Equal(property))
			}
		},
		Entry("an archive URL", "archive", "https://example.net/a.tgz", true, "url"),
		Entry("an archive ensure value", "archive", "present", false, "url"),
		Entry("a scaffold source", "scaffold", "/srv/templates/app", true, "source"),
		Entry("a scaffold ensure value", "scaffold", "absent", false, "source"),
		Entry("nothing", "scaffold", "", false, ""),
		Entry("a type without one", "file", "/tmp/x", false, ""),
	)

	It("says which providers run through a shell", func() {
		Expect(catalog.NeedsShell("exec", "shell")).To(BeTrue())
		Expect(catalog.NeedsShell("exec", "*")).To(BeTrue())
		Expect(catalog.NeedsShell("exec", "posix")).To(BeFalse())
		Expect(catalog.NeedsShell("exec", "")).To(BeFalse())
		Expect(catalog.NeedsShell("file", "shell")).To(BeFalse())
		Expect(catalog.ShellTypes()).To(Equal([]string{"exec"}))
	})

	It("holds command line knowledge only for types it has", func() {
		for _, t := range []string{"archive", "scaffold"} {
			_, ok := catalog.Lookup(t)
			Expect(ok).To(BeTrue(), t)
		}
	})
})
