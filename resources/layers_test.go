package resources_test

import (
	"os/exec"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("the resources layer", func() {
	It("imports no provider: a type or the engine declares what it needs and providers implement it", func() {
		out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}:{{join .Imports " "}}`, "github.com/ccm-fleet/ccm/resources/...").CombinedOutput()
		Expect(err).ToNot(HaveOccurred(), string(out))
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		Expect(len(lines)).To(BeNumerically(">", 5), "go list found the resources packages")
		for _, l := range lines {
			pkg, imports, _ := strings.Cut(l, ":")
			for _, imp := range strings.Fields(imports) {
				Expect(imp).ToNot(HavePrefix("github.com/ccm-fleet/ccm/providers"), "%s imports %s", pkg, imp)
			}
		}
	})
})
