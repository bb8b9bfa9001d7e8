package facts_test

import (
	"github.com/ccm-fleet/ccm/internal/hostile"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/facts"
)

var _ = Describe("ReadFile with hostile input", func() {
	DescribeTable("refuses it at once, naming the file and the key",
		func(doc []byte, want string) {
			path := filepath.Join(GinkgoT().TempDir(), "facts.yaml")
			Expect(os.WriteFile(path, doc, 0o600)).To(Succeed())
			_, err := facts.ReadFile(path)
			Expect(err).To(MatchError(facts.ErrInvalid))
			Expect(err).To(MatchError(ContainSubstring("facts file " + path + ": " + want)))
		},
		Entry("an alias bomb", hostile.AliasBomb("role"), "role.a0: YAML anchors are not accepted"),
		Entry("a key twice", []byte("role: web\nrole: db\n"), `key "role" appears twice`),
		Entry("a key twice in JSON", []byte(`{"role":"web","role":"db"}`), `key "role" appears twice`),
		Entry("invalid UTF-8", []byte("role: w\xffb\n"), "invalid UTF-8 at line 1"),
	)
})
