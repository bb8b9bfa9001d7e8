package broker_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/broker"
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

var _ = Describe("LoadAuthFile with hostile input", func() {
	DescribeTable("refuses it at once, naming the file and the key",
		func(doc []byte, want string) {
			path := filepath.Join(GinkgoT().TempDir(), "auth.yaml")
			Expect(os.WriteFile(path, doc, 0o600)).To(Succeed())
			_, err := broker.LoadAuthFile(path)
			Expect(err).To(MatchError(broker.ErrInvalidAuth))
			Expect(err).To(MatchError(ContainSubstring("auth file " + path + ": ")))
			Expect(err).To(MatchError(ContainSubstring(want)))
		},
		Entry("an alias bomb", aliasBomb("users"), "users.a0: YAML anchors are not accepted"),
		Entry("a key in another case", []byte("users: [{User: a, password: b}]\n"), `users[0]: unknown key "User"`),
		Entry("a key twice", []byte("users: [{user: a, user: b, password: c}]\n"), `users[0]: key "user" appears twice`),
		Entry("invalid UTF-8", []byte("users: [{user: \xff, password: c}]\n"), "invalid UTF-8"),
	)
})
