package manifest_test

import (
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/manifest"
	"github.com/ccm-fleet/ccm/resources"
)

// faultOnLine7 is a manifest whose fault is on line 7, inside the ccm:
// wrapper's resources; yaml.v3 alone reports line 3 for the first two
// (the `- file:` line the mapping hangs from).
const faultOnLine7 = "ccm:\n  resources:\n    - file:\n        /tmp/a:\n          ensure: present\n          owner: root\n"

var _ = Describe("Load with invalid YAML", func() {
	DescribeTable("names the file and the line of the fault",
		func(line7, want string) {
			path := filepath.Join(GinkgoT().TempDir(), "site.yaml")
			Expect(os.WriteFile(path, []byte(faultOnLine7+line7+"\n"), 0o600)).To(Succeed())
			_, err := manifest.Load(path)
			Expect(err).To(MatchError(resources.ErrInvalid))
			Expect(err).To(MatchError("manifest " + path + ": invalid YAML at line 7, " + want))
		},
		Entry("a key indented one space short", "         content: x", "column 10: value is not allowed in this context"),
		Entry("a list item among properties", "        - content: x", "column 9: non-map value is specified"),
		Entry("text after a quoted value", `          mode: "0644" x`, "column 24: value is not allowed in this context. map key-value is pre-defined"),
		Entry("an unclosed quote", `          content: "x`, "column 20: could not find end character of double-quoted text"),
	)
})
