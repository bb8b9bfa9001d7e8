package codecheck_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/internal/codecheck"
)

const module = "github.com/ccm-fleet/ccm"

// moduleImports lists every package of the module with the module's
// packages it imports (test files not included), paths relative to the
// module.
func moduleImports() map[string][]string {
	GinkgoHelper()
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "./...")
	cmd.Dir = filepath.Join("..", "..")
	out, err := cmd.Output()
	Expect(err).NotTo(HaveOccurred())
	rel := func(p string) (string, bool) { return strings.CutPrefix(p, module+"/") }
	imports := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg, ok := rel(fields[0])
		if !ok {
			continue
		}
		imports[pkg] = nil
		for _, d := range fields[1:] {
			if r, ok := rel(d); ok {
				imports[pkg] = append(imports[pkg], r)
			}
		}
	}
	return imports
}

var _ = Describe("The map of packages in docs/development.md", func() {
	It("places every package, and no import runs from a lower layer to a higher one", func() {
		md, err := os.ReadFile(filepath.Join("..", "..", "docs", "development.md"))
		Expect(err).NotTo(HaveOccurred())
		m, err := codecheck.ParseLayerMap(md)
		Expect(err).NotTo(HaveOccurred())
		imports := moduleImports()
		Expect(imports).To(HaveKey("agent"))
		Expect(imports).To(HaveKey("protocol"))
		found := m.Check(imports)
		Expect(found).To(BeEmpty(), "against the map:\n%s", strings.Join(found, "\n"))
	})

	It("reports an unplaced package and an import that runs upward, and refuses a package placed twice", func() {
		m, err := codecheck.ParseLayerMap([]byte("# x\n\n## The map\n\n| layer | packages |\n| --- | --- |\n" +
			"| 2 host | `agent/...`, `trust/...` |\n| 1 resources | `resources/...`, `resources/engine/tool` |\n| 0 wire | `protocol` |\n\n## Next\n\n| 9 nope | `ignored` |\n"))
		Expect(err).NotTo(HaveOccurred())
		Expect(m.Names).To(Equal([]string{"wire", "resources", "host"}))
		n, ok := m.Layer("resources/engine/tool")
		Expect(ok).To(BeTrue())
		Expect(n).To(Equal(1))
		_, ok = m.Layer("ignored")
		Expect(ok).To(BeFalse(), "a table after the map's section is not the map")
		Expect(m.Check(map[string][]string{
			"agent":            {"resources", "protocol"},
			"agent/policy":     {"agent"},
			"resources/engine": {"agent/policy"},
			"protocol":         {"resources/x"},
			"continuous":       {"protocol"},
			"trust/x":          {"agent/policy"},
			"agent/y":          {"trust/z"},
		})).To(Equal([]string{
			"agent/... and resources/... import each other (agent imports resources, resources/engine imports agent/policy)",
			"agent/... and trust/... import each other (agent/y imports trust/z, trust/x imports agent/policy)",
			"continuous: not on the map",
			"protocol (layer 0 wire) imports resources/x (layer 1 resources)",
			"resources/engine (layer 1 resources) imports agent/policy (layer 2 host)",
		}))
		_, err = codecheck.ParseLayerMap([]byte("## The map\n| 1 a | `x` |\n| 0 b | `x` |\n"))
		Expect(err).To(MatchError("the map places x in layers 1 and 0"))
		_, err = codecheck.ParseLayerMap([]byte("## Elsewhere\n| 1 a | `x` |\n"))
		Expect(err).To(MatchError(ContainSubstring("no layer table")))
	})
})
