package fileposix_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/providers/fileposix"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/filetype"
)

var _ = Describe("Factory", func() {
	It("describes the posix file provider", func() {
		f := fileposix.NewFactory(nil)
		Expect(f.Type()).To(Equal("file"))
		Expect(f.Name()).To(Equal("posix"))
	})

	It("is always manageable with priority 1", func() {
		f := fileposix.NewFactory(nil)
		ok, prio, err := f.IsManageable(map[string]any{"os": "anything"}, &filetype.Properties{})
		Expect(err).ToNot(HaveOccurred())
		Expect(ok).To(BeTrue())
		Expect(prio).To(Equal(1))
		ok, _, err = f.IsManageable(nil, nil)
		Expect(err).ToNot(HaveOccurred())
		Expect(ok).To(BeTrue())
	})

	It("makes providers implementing the file type's interface", func() {
		p, err := fileposix.NewFactory(nil).New()
		Expect(err).ToNot(HaveOccurred())
		Expect(p.Name()).To(Equal("posix"))
		Expect(p).To(BeAssignableToTypeOf(&fileposix.Provider{}))
		_, ok := p.(filetype.Provider)
		Expect(ok).To(BeTrue())
	})

	It("is selected by a registry for file resources", func() {
		reg := resources.NewRegistry()
		Expect(reg.RegisterType(filetype.Type{})).To(Succeed())
		Expect(reg.RegisterProvider(fileposix.NewFactory(nil))).To(Succeed())
		f, err := reg.Select("file", "", map[string]any{}, &filetype.Properties{})
		Expect(err).ToNot(HaveOccurred())
		Expect(f.Name()).To(Equal("posix"))
	})
})
