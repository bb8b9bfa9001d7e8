package scaffoldchoria_test

import (
	"context"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/providers/scaffoldchoria"
	"github.com/ccm-fleet/ccm/resources/scaffoldtype"
)

// trees holds the same scaffold written for each engine: a partial pulled
// in with render, files added with write, facts, data, Sprig/Jet builtins and
// the lookup helper.
var trees = map[string]map[string]string{
	scaffoldtype.EngineGo: {
		"_partials/header.txt": "# managed for {{ .facts.hostname }}",
		"app.conf": `{{ render "_partials/header.txt" . }}
host={{ .facts.hostname }}
family={{ .facts.os.family }}
port={{ .data.port }}
upper={{ .facts.hostname | upper }}
lookup={{ lookup "facts.hostname" }} {{ lookup "data.missing" "dflt" }}
`,
		"sub/services.tmpl": `{{ range .data.services }}{{ write (printf "svc-%s.conf" .) (printf "name=%s\n" .) }}{{ end }}list`,
	},
	scaffoldtype.EngineJet: {
		"_partials/header.txt": "# managed for [[ facts.hostname ]]",
		"app.conf": `[[ render("_partials/header.txt", .) ]]
host=[[ facts.hostname ]]
family=[[ facts.os.family ]]
port=[[ data.port ]]
upper=[[ upper(facts.hostname) ]]
lookup=[[ lookup("facts.hostname") ]] [[ lookup("data.missing", "dflt") ]]
`,
		"sub/services.tmpl": `[[ range _, s := data.services ]][[ write("svc-" + s + ".conf", "name=" + s + "\n") ]][[ end ]]list`,
	},
}

const wantApp = `# managed for web01
host=web01
family=debian
port=8080
upper=WEB01
lookup=web01 dflt
`

var _ = Describe("Provider rendering", func() {
	var (
		ctx    context.Context
		prov   *scaffoldchoria.Provider
		source string
		target string
	)

	BeforeEach(func() {
		ctx = context.Background()
		prov = scaffoldchoria.New(nil)
		source = filepath.Join(GinkgoT().TempDir(), "src")
		target = filepath.Join(GinkgoT().TempDir(), "etc", "app")
	})

	DescribeTable("renders facts, data, partials and write() with each engine",
		func(engine string) {
			writeTree(source, trees[engine])
			props := newProps(target, source, engine)

			st, err := prov.Scaffold(ctx, testEnv(), props, false)
			Expect(err).NotTo(HaveOccurred())
			managed := []string{
				filepath.Join(target, "app.conf"),
				filepath.Join(target, "sub", "services.tmpl"),
				filepath.Join(target, "svc-api.conf"),
				filepath.Join(target, "svc-worker.conf"),
			}
			Expect(st.Metadata.Changed).To(ConsistOf(managed))
			Expect(st.Metadata.Stable).To(BeEmpty())
			Expect(st.Metadata.Purged).To(BeEmpty())
			Expect(st.Metadata.TargetExists).To(BeTrue())
			Expect(st.Metadata.Engine).To(Equal(engine))
			Expect(st.Metadata.Provider).To(Equal("choria"))
			Expect(st.Ensure).To(Equal("present"))
			Expect(st.Type).To(Equal("scaffold"))

			Expect(readFile(filepath.Join(target, "app.conf"))).To(Equal(wantApp))
			Expect(readFile(filepath.Join(target, "sub", "services.tmpl"))).To(Equal("list"))
			Expect(readFile(filepath.Join(target, "svc-api.conf"))).To(Equal("name=api\n"))
			Expect(readFile(filepath.Join(target, "svc-worker.conf"))).To(Equal("name=worker\n"))
			Expect(filepath.Join(target, "_partials")).NotTo(BeAnExistingFile())

			again, err := prov.Status(ctx, testEnv(), props)
			Expect(err).NotTo(HaveOccurred())
			Expect(again.Metadata.Changed).To(BeEmpty())
			Expect(again.Metadata.Stable).To(ConsistOf(managed))
		},
		Entry("go", scaffoldtype.EngineGo),
		Entry("jet", scaffoldtype.EngineJet),
	)

	DescribeTable("honours custom delimiters and leaves the default ones alone",
		func(engine, tmpl string) {
			writeTree(source, map[string]string{"tmpl.yaml": tmpl})
			props := newProps(target, source, engine, func(p *scaffoldtype.Properties) {
				p.LeftDelimiter, p.RightDelimiter = "<<", ">>"
			})

			_, err := prov.Scaffold(ctx, testEnv(), props, false)
			Expect(err).NotTo(HaveOccurred())
			Expect(readFile(filepath.Join(target, "tmpl.yaml"))).To(Equal("host: web01\ngo: {{ .x }}\njet: [[ x ]]\n"))
		},
		Entry("go", scaffoldtype.EngineGo, "host: << .facts.hostname >>\ngo: {{ .x }}\njet: [[ x ]]\n"),
		Entry("jet", scaffoldtype.EngineJet, "host: << facts.hostname >>\ngo: {{ .x }}\njet: [[ x ]]\n"),
	)

	It("uses [[ ]] as Jet's default delimiters and {{ }} as Go's", func() {
		jetSrc := filepath.Join(GinkgoT().TempDir(), "jet")
		writeTree(jetSrc, map[string]string{"a.txt": "{{ kept }} [[ facts.hostname ]]"})
		_, err := prov.Scaffold(ctx, testEnv(), newProps(target, jetSrc, scaffoldtype.EngineJet), false)
		Expect(err).NotTo(HaveOccurred())
		Expect(readFile(filepath.Join(target, "a.txt"))).To(Equal("{{ kept }} web01"))

		goSrc := filepath.Join(GinkgoT().TempDir(), "go")
		goTarget := filepath.Join(GinkgoT().TempDir(), "go-target")
		writeTree(goSrc, map[string]string{"a.txt": "[[ kept ]] {{ .facts.hostname }}"})
		_, err = prov.Scaffold(ctx, testEnv(), newProps(goTarget, goSrc, scaffoldtype.EngineGo), false)
		Expect(err).NotTo(HaveOccurred())
		Expect(readFile(filepath.Join(goTarget, "a.txt"))).To(Equal("[[ kept ]] web01"))
	})

	DescribeTable("skip_empty leaves out files that render to white space",
		func(skip bool, wantEmptyFile bool) {
			writeTree(source, map[string]string{
				"full.txt":  "[[ facts.hostname ]]",
				"empty.txt": "[[ if false ]]never[[ end ]]\n  \n",
			})
			props := newProps(target, source, scaffoldtype.EngineJet, func(p *scaffoldtype.Properties) { p.SkipEmpty = skip })

			st, err := prov.Scaffold(ctx, testEnv(), props, false)
			Expect(err).NotTo(HaveOccurred())
			Expect(readFile(filepath.Join(target, "full.txt"))).To(Equal("web01"))
			if wantEmptyFile {
				Expect(filepath.Join(target, "empty.txt")).To(BeAnExistingFile())
				Expect(st.Metadata.Changed).To(ContainElement(filepath.Join(target, "empty.txt")))
			} else {
				Expect(filepath.Join(target, "empty.txt")).NotTo(BeAnExistingFile())
				Expect(st.Metadata.Changed).To(Equal([]string{filepath.Join(target, "full.txt")}))
			}
		},
		Entry("skip_empty: true", true, false),
		Entry("skip_empty: false", false, true),
	)

	It("fails on a template that does not parse and writes nothing", func() {
		writeTree(source, map[string]string{"bad.txt": "[[ if ]]"})
		_, err := prov.Scaffold(ctx, testEnv(), newProps(target, source, scaffoldtype.EngineJet), false)
		Expect(err).To(MatchError(ContainSubstring("scaffold " + target)))
		Expect(target).NotTo(BeADirectory())
	})

	It("fails when the source directory does not exist", func() {
		_, err := prov.Status(ctx, testEnv(), newProps(target, filepath.Join(source, "missing"), scaffoldtype.EngineJet))
		Expect(err).To(MatchError(ContainSubstring("cannot read source directory")))
	})

	It("rejects a URL source clearly", func() {
		_, err := prov.Status(ctx, testEnv(), newProps(target, "https://example.net/templates.tgz", scaffoldtype.EngineJet))
		Expect(err).To(MatchError(scaffoldchoria.ErrUnsupportedSource))
		Expect(err).To(MatchError(ContainSubstring("https://example.net/templates.tgz")))
	})

	It("rejects a target that is a file", func() {
		writeTree(source, map[string]string{"a.txt": "x"})
		Expect(os.MkdirAll(filepath.Dir(target), 0o755)).To(Succeed())
		Expect(os.WriteFile(target, []byte("file"), 0o644)).To(Succeed())
		_, err := prov.Scaffold(ctx, testEnv(), newProps(target, source, scaffoldtype.EngineJet), false)
		Expect(err).To(MatchError(scaffoldchoria.ErrTargetNotDirectory))
		Expect(readFile(target)).To(Equal("file"))
	})

	It("does nothing when ctx is already done", func() {
		writeTree(source, map[string]string{"a.txt": "x"})
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		_, err := prov.Scaffold(cctx, testEnv(), newProps(target, source, scaffoldtype.EngineJet), false)
		Expect(err).To(MatchError(context.Canceled))
		Expect(target).NotTo(BeADirectory())
	})

	It("changes nothing when rendering in noop mode", func() {
		writeTree(source, trees[scaffoldtype.EngineJet])
		st, err := prov.Scaffold(ctx, testEnv(), newProps(target, source, scaffoldtype.EngineJet), true)
		Expect(err).NotTo(HaveOccurred())
		Expect(st.Metadata.Changed).To(HaveLen(4))
		Expect(st.Metadata.TargetExists).To(BeFalse())
		Expect(st.Ensure).To(Equal("absent"))
		Expect(target).NotTo(BeADirectory())
	})
})
