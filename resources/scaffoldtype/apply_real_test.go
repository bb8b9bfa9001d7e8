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

func write(path, content string) {
	GinkgoHelper()
	Expect(os.MkdirAll(filepath.Dir(path), 0o755)).To(Succeed())
	Expect(os.WriteFile(path, []byte(content), 0o644)).To(Succeed())
}

func read(path string) string {
	GinkgoHelper()
	b, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred())
	return string(b)
}

var _ = Describe("Type with the choria provider", func() {
	var (
		ctx     context.Context
		workDir string
		target  string
		prov    resources.Provider
		env     *templates.Env
	)

	BeforeEach(func() {
		ctx = context.Background()
		workDir = GinkgoT().TempDir()
		target = filepath.Join(GinkgoT().TempDir(), "etc", "app")
		var err error
		prov, err = scaffoldchoria.NewFactory(nil).New()
		Expect(err).NotTo(HaveOccurred())
		env = templates.New(map[string]any{"hostname": "web01"}, map[string]any{"port": 8080})
	})

	apply := func(p *scaffoldtype.Properties, noop bool) (*resources.Outcome, error) {
		GinkgoHelper()
		cp := *p
		Expect(cp.Validate()).To(Succeed())
		return scaffoldtype.Type{}.Apply(ctx, &resources.ApplyContext{Noop: noop, WorkingDir: workDir, Env: env}, &cp, prov)
	}

	DescribeTable("renders, is stable on the next run, and notices one edited template under noop",
		func(engine string, files map[string]string, edit [2]string) {
			for name, content := range files {
				write(filepath.Join(workDir, "templates", name), content)
			}
			p := &scaffoldtype.Properties{Source: "templates", Engine: engine}
			p.Name = target

			out, err := apply(p, false)
			Expect(err).NotTo(HaveOccurred())
			Expect(out.Changed).To(BeTrue())
			st := out.State.(*protocol.ScaffoldState)
			// The state is read again after rendering: every file stable.
			Expect(st.Metadata.Changed).To(BeEmpty())
			Expect(st.Metadata.Stable).To(ConsistOf(filepath.Join(target, "main.conf"), filepath.Join(target, "conf.d", "port.conf")))
			Expect(read(filepath.Join(target, "main.conf"))).To(Equal("# web01\nhost=web01\n"))
			Expect(read(filepath.Join(target, "conf.d", "port.conf"))).To(Equal("port=8080\n"))

			out, err = apply(p, false)
			Expect(err).NotTo(HaveOccurred())
			Expect(out.Changed).To(BeFalse())
			Expect(out.State.(*protocol.ScaffoldState).Metadata.Stable).To(HaveLen(2))

			write(filepath.Join(workDir, "templates", edit[0]), edit[1])
			out, err = apply(p, true)
			Expect(err).NotTo(HaveOccurred())
			Expect(out.Changed).To(BeTrue())
			Expect(out.NoopMessage).To(Equal("Would have changed 1 scaffold files"))
			Expect(read(filepath.Join(target, "conf.d", "port.conf"))).To(Equal("port=8080\n"))

			out, err = apply(p, false)
			Expect(err).NotTo(HaveOccurred())
			Expect(out.Changed).To(BeTrue())
			Expect(out.State.(*protocol.ScaffoldState).Metadata.Changed).To(BeEmpty())
			Expect(out.State.(*protocol.ScaffoldState).Metadata.Stable).To(HaveLen(2))
			Expect(read(filepath.Join(target, "conf.d", "port.conf"))).To(Equal("listen=8080\n"))
		},
		Entry("jet", scaffoldtype.EngineJet, map[string]string{
			"_partials/head.txt": "# [[ facts.hostname ]]",
			"main.conf":          "[[ render(\"_partials/head.txt\", .) ]]\nhost=[[ facts.hostname ]]\n",
			"conf.d/port.conf":   "port=[[ data.port ]]\n",
		}, [2]string{"conf.d/port.conf", "listen=[[ data.port ]]\n"}),
		Entry("go", scaffoldtype.EngineGo, map[string]string{
			"_partials/head.txt": "# {{ .facts.hostname }}",
			"main.conf":          "{{ render \"_partials/head.txt\" . }}\nhost={{ .facts.hostname }}\n",
			"conf.d/port.conf":   "port={{ .data.port }}\n",
		}, [2]string{"conf.d/port.conf", "listen={{ .data.port }}\n"}),
	)

	It("reports what purge would delete under noop and deletes it for real", func() {
		write(filepath.Join(workDir, "templates", "a.conf"), "a")
		write(filepath.Join(target, "a.conf"), "a")
		write(filepath.Join(target, "stray.conf"), "stray")
		p := &scaffoldtype.Properties{Source: "templates", Purge: true}
		p.Name = target

		out, err := apply(p, true)
		Expect(err).NotTo(HaveOccurred())
		Expect(out.NoopMessage).To(Equal("Would have changed 1 scaffold files"))
		Expect(filepath.Join(target, "stray.conf")).To(BeAnExistingFile())

		out, err = apply(p, false)
		Expect(err).NotTo(HaveOccurred())
		Expect(out.Changed).To(BeTrue())
		Expect(filepath.Join(target, "stray.conf")).NotTo(BeAnExistingFile())
		Expect(read(filepath.Join(target, "a.conf"))).To(Equal("a"))
	})

	It("removes managed files for absent, keeps unrelated ones and the directory holding them", func() {
		write(filepath.Join(workDir, "templates", "a.conf"), "a")
		write(filepath.Join(workDir, "templates", "sub", "b.conf"), "b")
		p := &scaffoldtype.Properties{Source: "templates"}
		p.Name = target
		_, err := apply(p, false)
		Expect(err).NotTo(HaveOccurred())
		write(filepath.Join(target, "unrelated.txt"), "keep me")

		p.Ensure = "absent"
		out, err := apply(p, true)
		Expect(err).NotTo(HaveOccurred())
		Expect(out.NoopMessage).To(Equal("Would have removed 2 scaffold files"))
		Expect(filepath.Join(target, "a.conf")).To(BeAnExistingFile())

		out, err = apply(p, false)
		Expect(err).NotTo(HaveOccurred())
		Expect(out.Changed).To(BeTrue())
		Expect(filepath.Join(target, "a.conf")).NotTo(BeAnExistingFile())
		Expect(filepath.Join(target, "sub")).NotTo(BeAnExistingFile())
		Expect(read(filepath.Join(target, "unrelated.txt"))).To(Equal("keep me"))

		out, err = apply(p, false)
		Expect(err).NotTo(HaveOccurred())
		Expect(out.Changed).To(BeFalse())

		Expect(os.Remove(filepath.Join(target, "unrelated.txt"))).To(Succeed())
		write(filepath.Join(target, "a.conf"), "edited")
		out, err = apply(p, false)
		Expect(err).NotTo(HaveOccurred())
		Expect(out.Changed).To(BeTrue())
		Expect(target).NotTo(BeAnExistingFile())

		out, err = apply(p, true)
		Expect(err).NotTo(HaveOccurred())
		Expect(out.Changed).To(BeFalse())
		Expect(out.NoopMessage).To(BeEmpty())
		Expect(out.State.Common().Ensure).To(Equal("absent"))
	})

	It("fails clearly for a URL source and changes nothing", func() {
		p := &scaffoldtype.Properties{Source: "https://example.net/templates.tgz"}
		p.Name = target
		_, err := apply(p, false)
		Expect(err).To(MatchError(scaffoldchoria.ErrUnsupportedSource))
		Expect(target).NotTo(BeAnExistingFile())
	})
})
