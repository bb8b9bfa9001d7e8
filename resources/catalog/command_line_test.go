package catalog_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/resources"
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

	It("declares a command for every type but apply, each flag naming a property its type has", func() {
		orders := map[int]string{}
		for _, e := range catalog.Entries() {
			if e.Name == "apply" {
				Expect(e.Command).To(BeNil())
				continue
			}
			Expect(e.Command).NotTo(BeNil(), e.Name)
			Expect(orders).NotTo(HaveKey(e.Command.Order), e.Name)
			orders[e.Command.Order] = e.Name
			Expect(e.Command.Help).NotTo(BeEmpty(), e.Name)
			keys := resources.PropertyKeys(e.Type).Names()
			for _, f := range e.Command.Flags {
				Expect(keys).To(ContainElement(f.Property), "--%s of %s", f.Name, e.Name)
			}
		}
		var names []string
		for _, e := range catalog.Commands() {
			names = append(names, e.Name)
		}
		Expect(names).To(Equal([]string{"file", "exec", "package", "service", "archive", "scaffold", "user", "group"}))
	})

	It("says, as CCM's command line does, what a local ensure fills in and what status reads a type with", func() {
		defaults := map[string]catalog.LocalDefaults{}
		status := map[string]catalog.StatusEnsure{}
		for _, e := range catalog.Commands() {
			if e.Command.Defaults != (catalog.LocalDefaults{}) {
				defaults[e.Name] = e.Command.Defaults
			}
			if e.Command.StatusEnsure != catalog.StatusAsIs {
				Expect(e.Command.Status).To(Equal(catalog.StatusRead), "%s: status reads it", e.Name)
				status[e.Name] = e.Command.StatusEnsure
			}
		}
		Expect(defaults).To(Equal(map[string]catalog.LocalDefaults{
			"file":    {Owner: true, Modes: true, NotWhenAbsent: true},
			"archive": {Owner: true},
		}))
		Expect(status).To(Equal(map[string]catalog.StatusEnsure{"file": catalog.StatusFound, "package": catalog.StatusAbsent, "user": catalog.StatusAbsent, "group": catalog.StatusAbsent}))
	})

	It("says which types a refresh acts on, which carry bundle sources and which are one-off", func() {
		var refreshes, sources, oneOff []string
		for _, e := range catalog.Entries() {
			if e.Refreshes {
				refreshes = append(refreshes, e.Name)
			}
			if e.BundleSource {
				sources = append(sources, e.Name)
			}
			if e.OneOff {
				oneOff = append(oneOff, e.Name)
			}
		}
		Expect(refreshes).To(Equal([]string{"exec", "service"}))
		Expect(sources).To(Equal([]string{"file", "scaffold"}))
		Expect(oneOff).To(Equal([]string{"exec"}))
	})

	It("holds command line knowledge only for types it has", func() {
		for _, t := range []string{"archive", "scaffold"} {
			_, ok := catalog.Lookup(t)
			Expect(ok).To(BeTrue(), t)
		}
	})
})
