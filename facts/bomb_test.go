package facts_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/facts"
)

// aliasBomb is a YAML document of 9 levels of anchors, each aliasing the
// previous 9 times (9^9 strings once expanded), under key top.
func aliasBomb(top string) []byte {
	var b strings.Builder
	b.WriteString(top + ":\n" + `  a0: &a0 ["x","x","x","x","x","x","x","x","x"]` + "\n")
	for i := 1; i < 9; i++ {
		refs := strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*a%d, ", i-1), 9), ", ")
		fmt.Fprintf(&b, "  a%d: &a%d [%s]\n", i, i, refs)
	}
	return []byte(b.String())
}

var _ = Describe("ReadFile with hostile input", func() {
	DescribeTable("refuses it at once, naming the file and the key",
		func(doc []byte, want string) {
			path := filepath.Join(GinkgoT().TempDir(), "facts.yaml")
			Expect(os.WriteFile(path, doc, 0o600)).To(Succeed())
			_, err := facts.ReadFile(path)
			Expect(err).To(MatchError(facts.ErrInvalid))
			Expect(err).To(MatchError(ContainSubstring("facts file " + path + ": " + want)))
		},
		Entry("an alias bomb", aliasBomb("role"), "role.a0: YAML anchors are not accepted"),
		Entry("a key twice", []byte("role: web\nrole: db\n"), `key "role" appears twice`),
		Entry("a key twice in JSON", []byte(`{"role":"web","role":"db"}`), `key "role" appears twice`),
		Entry("invalid UTF-8", []byte("role: w\xffb\n"), "invalid UTF-8 at line 1"),
	)
})
