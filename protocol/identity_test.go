package protocol_test

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/protocol"
)

var _ = Describe("ValidateIdentity", func() {
	DescribeTable("accepts host names",
		func(id string) { Expect(protocol.ValidateIdentity(id)).To(Succeed()) },
		Entry("short name", "web1"),
		Entry("fqdn", "web1.example.com"),
		Entry("dash and underscore inside", "db-01_a.example.net"),
		Entry("single character", "a"),
		Entry("leading digit", "1host"),
		Entry("253 characters", strings.Repeat("a", 253)),
	)

	DescribeTable("refuses anything else, saying why",
		func(id, want string) {
			err := protocol.ValidateIdentity(id)
			Expect(err).To(MatchError(protocol.ErrBadRequest))
			Expect(err.Error()).To(ContainSubstring(want))
		},
		Entry("empty", "", `identity "": must not be empty`),
		Entry("too long", strings.Repeat("a", 254), `is 254 characters long, the limit is 253`),
		Entry("too long, quoted in part", strings.Repeat("a", 300000), `identity "`+strings.Repeat("a", 64)+`"… (300000 bytes): is 300000 characters long`),
		Entry("space", "web 1", `character ' ' at position 3 is not allowed`),
		Entry("wildcard", "web*", `character '*' at position 3`),
		Entry("subject wildcard", ">", `character '>' at position 0`),
		Entry("non-ASCII", "wéb", `character 'é' at position 1`),
		Entry("slash", "a/b", `character '/'`),
		Entry("leading dash", "-web", `must not start with '-'`),
		Entry("leading dot", ".web", `must not start with '.'`),
		Entry("leading underscore", "_request", `must not start with '_'`),
		Entry("trailing dot", "web.example.com.", `must not end with '.'`),
		Entry("empty label", "web..example", `must not contain an empty label`),
	)

	It("keeps the error about a huge identity short", func() {
		err := protocol.ValidateIdentity(strings.Repeat("é", 100000))
		Expect(err).To(HaveOccurred())
		Expect(len(err.Error())).To(BeNumerically("<", 300))
		Expect(err.Error()).To(ContainSubstring(`"` + strings.Repeat("é", 32) + `"… (200000 bytes)`))
	})
})
