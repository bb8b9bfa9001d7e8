package facts_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/facts"
)

var _ = Describe("Gather", func() {
	It("gathers the flat standard facts and the nested ones", func() {
		f, err := facts.Gather(context.Background(), facts.Options{})
		Expect(err).ToNot(HaveOccurred())
		host, _ := os.Hostname()
		Expect(f).To(HaveKeyWithValue("hostname", host))
		Expect(f).To(HaveKeyWithValue("identity", host))
		Expect(f).To(HaveKeyWithValue("cpus", runtime.NumCPU()))
		Expect(f["os"]).To(Equal("debian"), "this project's machines are Debian")
		Expect(f["memory_mb"]).To(BeNumerically(">", 0))
		for _, k := range []string{"platform", "platform_version", "kernel", "arch", "virtualization"} {
			Expect(f).To(HaveKey(k))
		}
		Expect(f["host"]).To(HaveKeyWithValue("info", HaveKeyWithValue("platformFamily", "debian")))
	})

	It("lets a file, then k=v pairs, then the identity override gathered facts", func() {
		dir := GinkgoT().TempDir()
		file := filepath.Join(dir, "facts.yaml")
		Expect(os.WriteFile(file, []byte("role: web\nos: custom\ndc: {name: ams1}\n"), 0o600)).To(Succeed())
		f, err := facts.Gather(context.Background(), facts.Options{File: file, Pairs: []string{"role=db", "tier=gold=1"}, Identity: "node-7"})
		Expect(err).ToNot(HaveOccurred())
		Expect(f).To(HaveKeyWithValue("role", "db"))
		Expect(f).To(HaveKeyWithValue("os", "custom"))
		Expect(f).To(HaveKeyWithValue("tier", "gold=1"))
		Expect(f).To(HaveKeyWithValue("identity", "node-7"))
		Expect(f["dc"]).To(HaveKeyWithValue("name", "ams1"))
	})

	It("sets the site fact from the configured site, over an agreeing custom one", func() {
		f := map[string]any{"site": "fra1"}
		Expect(facts.Merge(f, facts.Options{Site: "fra1", Pairs: []string{"role=web"}})).To(Succeed())
		Expect(f).To(HaveKeyWithValue("site", "fra1"))
		g := map[string]any{}
		Expect(facts.Merge(g, facts.Options{Site: "ams2"})).To(Succeed())
		Expect(g).To(HaveKeyWithValue("site", "ams2"))
	})

	It("gives no site fact without a configured or custom site", func() {
		f := map[string]any{}
		Expect(facts.Merge(f, facts.Options{Pairs: []string{"role=web"}})).To(Succeed())
		Expect(f).ToNot(HaveKey("site"))
	})

	It("keeps a custom site fact that is a valid site name", func() {
		f := map[string]any{}
		Expect(facts.Merge(f, facts.Options{Pairs: []string{"site=lon3"}})).To(Succeed())
		Expect(f).To(HaveKeyWithValue("site", "lon3"))
	})

	DescribeTable("refuses unusable custom facts",
		func(opts func(dir string) facts.Options, problem string) {
			_, err := facts.Gather(context.Background(), opts(GinkgoT().TempDir()))
			Expect(err).To(MatchError(facts.ErrInvalid))
			Expect(err.Error()).To(ContainSubstring(problem))
		},
		Entry("pair without =", func(string) facts.Options { return facts.Options{Pairs: []string{"role"}} }, "must look like key=value"),
		Entry("bad key", func(string) facts.Options { return facts.Options{Pairs: []string{"a b=1"}} }, `fact key "a b"`),
		Entry("missing file", func(d string) facts.Options { return facts.Options{File: filepath.Join(d, "nope")} }, "no such file"),
		Entry("not a map", func(d string) facts.Options {
			p := filepath.Join(d, "f.yaml")
			Expect(os.WriteFile(p, []byte("- a\n- b\n"), 0o600)).To(Succeed())
			return facts.Options{File: p}
		}, "expected an object"),
		Entry("a configured site that is not a site name", func(string) facts.Options { return facts.Options{Site: "fra.1"} }, `site: bad_request: site name "fra.1": character at position 3`),
		Entry("a custom site fact that is not a site name", func(string) facts.Options { return facts.Options{Pairs: []string{"site=fra 1"}} }, `fact site: bad_request: site name "fra 1"`),
		Entry("a custom site fact that is not a string", func(d string) facts.Options {
			p := filepath.Join(d, "f.yaml")
			Expect(os.WriteFile(p, []byte("site: 12\n"), 0o600)).To(Succeed())
			return facts.Options{File: p}
		}, "fact site must be a site name"),
		Entry("a custom site fact naming another site", func(string) facts.Options {
			return facts.Options{Site: "fra1", Pairs: []string{"site=ams2"}}
		}, `custom fact site=ams2 conflicts with the configured site "fra1"`),
	)
})
