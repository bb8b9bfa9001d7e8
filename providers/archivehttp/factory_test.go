package archivehttp_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/providers/archivehttp"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/archivetype"
)

var _ = Describe("Factory", func() {
	It("is the http provider of the archive type", func() {
		f := archivehttp.NewFactory(nil)
		Expect(f.Type()).To(Equal("archive"))
		Expect(f.Name()).To(Equal("http"))
		p, err := f.New()
		Expect(err).NotTo(HaveOccurred())
		Expect(p.Name()).To(Equal("http"))
		Expect(p).To(BeAssignableToTypeOf(&archivehttp.Provider{}))
	})

	DescribeTable("IsManageable (provider selection)",
		func(name, url string, want bool) {
			p := &archivetype.Properties{URL: url}
			p.Name = name
			ok, prio, err := archivehttp.NewFactory(nil).IsManageable(map[string]any{}, p)
			Expect(err).NotTo(HaveOccurred())
			Expect(ok).To(Equal(want))
			if want {
				Expect(prio).To(Equal(1))
			}
		},
		Entry("https .tar.gz", "/tmp/a.tar.gz", "https://example.com/a.tar.gz", true),
		Entry("http .tgz", "/tmp/a.tgz", "http://example.com/a.tgz", true),
		Entry("http .tar", "/tmp/a.tar", "http://example.com/a.tar", true),
		Entry("https .zip", "/tmp/a.zip", "https://example.com/a.zip", true),
		Entry("ftp scheme", "/tmp/a.zip", "ftp://example.com/a.zip", false),
		Entry("file scheme", "/tmp/a.zip", "file:///srv/a.zip", false),
		Entry("unsupported URL extension", "/tmp/a.zip", "https://example.com/a.rar", false),
		Entry("unsupported name extension", "/tmp/a.rar", "https://example.com/a.zip", false),
		Entry("unparseable URL", "/tmp/a.zip", "http://[::1/a.zip", false),
	)

	It("refuses properties of another type", func() {
		_, _, err := archivehttp.NewFactory(nil).IsManageable(nil, &otherProps{})
		Expect(err).To(MatchError(ContainSubstring("not archive properties")))
	})

	It("is chosen by the registry for archive resources", func() {
		reg := resources.NewRegistry()
		Expect(reg.RegisterType(archivetype.Type{})).To(Succeed())
		Expect(reg.RegisterProvider(archivehttp.NewFactory(nil))).To(Succeed())
		p := &archivetype.Properties{URL: "https://example.com/a.zip"}
		p.Name = "/tmp/a.zip"
		f, err := reg.Select("archive", "", nil, p)
		Expect(err).NotTo(HaveOccurred())
		Expect(f.Name()).To(Equal("http"))
	})
})

type otherProps struct{ resources.CommonProperties }

func (*otherProps) Validate() error { return nil }
