package broker_test

import (
	"github.com/ccm-fleet/ccm/internal/hostile"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/broker"
)

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
		Entry("an alias bomb", hostile.AliasBomb("users"), "users.a0: YAML anchors are not accepted"),
		Entry("a key in another case", []byte("users: [{User: a, password: b}]\n"), `users[0]: unknown key "User"`),
		Entry("a key twice", []byte("users: [{user: a, user: b, password: c}]\n"), `users[0]: key "user" appears twice`),
		Entry("invalid UTF-8", []byte("users: [{user: \xff, password: c}]\n"), "invalid UTF-8"),
	)
})
