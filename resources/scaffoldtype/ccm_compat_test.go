package scaffoldtype_test

import (
	"context"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/providers/scaffoldchoria"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/scaffoldtype"
	"github.com/ccm-fleet/ccm/resources/templates"
)

var _ = Describe("Scaffold sources: a local directory of templates, by path (a relative one joined to the working directory) or file:// URL", func() {
	var (
		workDir, target string
		prov            resources.Provider
	)
	BeforeEach(func() {
		workDir = GinkgoT().TempDir()
		target = filepath.Join(GinkgoT().TempDir(), "app")
		var err error
		prov, err = scaffoldchoria.NewFactory(nil).New()
		Expect(err).NotTo(HaveOccurred())
	})
	apply := func(source string, noop bool) (*resources.Outcome, error) {
		GinkgoHelper()
		p := &scaffoldtype.Properties{Source: source}
		p.Name = target
		Expect(p.Validate()).To(Succeed())
		return scaffoldtype.Type{}.Apply(context.Background(), &resources.ApplyContext{Noop: noop, WorkingDir: workDir, Env: templates.New(nil, nil)}, p, prov)
	}

	DescribeTable("a source that renders no file is an error (at least one stable file must exist), and changes nothing",
		func(files map[string]string, noop bool) {
			src := filepath.Join(workDir, "tpl")
			Expect(os.MkdirAll(src, 0o755)).To(Succeed())
			for name, content := range files {
				write(filepath.Join(src, name), content)
			}
			_, err := apply("tpl", noop)
			Expect(err).To(MatchError(scaffoldtype.ErrNothingRendered))
			Expect(err.Error()).To(ContainSubstring("scaffold " + target))
			Expect(target).NotTo(BeADirectory(), "nothing was created")
		},
		Entry("an empty source directory", map[string]string{}, false),
		Entry("an empty source directory, under noop", map[string]string{}, true),
		Entry("a source with only partials", map[string]string{"_partials/head.txt": "x"}, false),
	)

	It("renders a file:// URL of a local directory, passed through unchanged by the type", func() {
		src := filepath.Join(workDir, "tpl")
		write(filepath.Join(src, "a.conf"), "a=1\n")
		out, err := apply("file://"+src, false)
		Expect(err).NotTo(HaveOccurred())
		Expect(out.Changed).To(BeTrue())
		Expect(read(filepath.Join(target, "a.conf"))).To(Equal("a=1\n"))
		Expect(out.State.(*protocol.ScaffoldState).Metadata.Stable).To(ConsistOf(filepath.Join(target, "a.conf")))
	})

	DescribeTable("refuses other URL sources clearly, changing nothing",
		func(source string) {
			_, err := apply(source, false)
			Expect(err).To(MatchError(resources.ErrInvalid))
			Expect(err).To(MatchError(scaffoldchoria.ErrUnsupportedSource))
			Expect(err.Error()).To(ContainSubstring(source))
			Expect(target).NotTo(BeADirectory())
		},
		Entry("https", "https://example.com/templates.tgz"),
		Entry("a file URL with a remote host", "file://elsewhere/srv/tpl"),
		Entry("a relative file URL", "file:tpl"),
	)

	It("renders with the scaffold's own data instead of the run's, facts still available (CCM's data property)", func() {
		src := filepath.Join(workDir, "tpl")
		write(filepath.Join(src, "a.conf"), "port=[[ data.port ]] host=[[ facts.hostname ]]\n")
		p := &scaffoldtype.Properties{Source: "tpl", Data: map[string]any{"port": 9090}}
		p.Name = target
		Expect(p.Validate()).To(Succeed())
		env := templates.New(map[string]any{"hostname": "web01"}, map[string]any{"port": 8080})
		_, err := scaffoldtype.Type{}.Apply(context.Background(), &resources.ApplyContext{WorkingDir: workDir, Env: env}, p, prov)
		Expect(err).NotTo(HaveOccurred())
		Expect(read(filepath.Join(target, "a.conf"))).To(Equal("port=9090 host=web01\n"))
	})

	It("joins a relative source to the working directory and leaves a URL as written", func() {
		Expect(scaffoldtype.ResolveSource("https://example.com/t", "/srv/m")).To(Equal("https://example.com/t"))
		Expect(scaffoldtype.ResolveSource("tpl", "/srv/m")).To(Equal("/srv/m/tpl"))
	})
})
