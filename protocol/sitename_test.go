package protocol_test

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/protocol"
)

var _ = Describe("ValidateSite", func() {
	DescribeTable("accepts names that are one subject token and a JetStream domain",
		func(name string) { Expect(protocol.ValidateSite(name)).To(Succeed()) },
		Entry("letters and digits", "fra1"),
		Entry("dash and underscore", "eu-west_2"),
		Entry("starting with a digit", "1dc"),
		Entry("64 characters", strings.Repeat("a", 64)),
	)
	DescribeTable("refuses the rest, naming the problem",
		func(name, problem string) {
			err := protocol.ValidateSite(name)
			Expect(err).To(MatchError(protocol.ErrBadRequest))
			Expect(err.Error()).To(ContainSubstring(problem))
		},
		Entry("empty", "", "must not be empty"),
		Entry("a dot (two subject tokens)", "fra.1", `site name "fra.1": character at position 3`),
		Entry("a wildcard", "fra*", "character at position 3"),
		Entry("a full wildcard", ">", "must start with a letter or a digit"),
		Entry("a space", "fra 1", "character at position 3"),
		Entry("non-ASCII", "zürich", "character at position 1"),
		Entry("a leading dash", "-fra", "must start with a letter or a digit"),
		Entry("65 characters", strings.Repeat("a", 65), "65 characters long, the limit is 64"),
	)
})
