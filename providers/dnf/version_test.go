package dnf_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/providers/dnf"
)

var _ = Describe("VersionCmp", func() {
	DescribeTable("compares versions generically",
		func(a, b string, ignoreTrailingZeroes bool, want int) {
			Expect(dnf.VersionCmp(a, b, ignoreTrailingZeroes)).To(Equal(want), "%s vs %s", a, b)
			Expect(dnf.VersionCmp(b, a, ignoreTrailingZeroes)).To(Equal(-want), "%s vs %s", b, a)
		},
		// The rules: segments (a "-", a ".", a digit run, any other run)
		// compare left to right; "-" loses to anything, then "."; digit runs
		// compare as numbers unless either has a leading zero, the rest as
		// text ignoring case; when one runs out of segments, the whole
		// strings compare as text.
		Entry("numeric 1 < 2", "1.0", "2.0", false, -1),
		Entry("numeric 10 > 9", "1.10", "1.9", false, 1),
		Entry("out of segments: 1.0 < 1.0.1 as text", "1.0", "1.0.1", false, -1),
		Entry("equal versions: the release decides", "1.0-1", "1.0-2", false, -1),
		Entry("lexical a < b", "1.0a", "1.0b", false, -1),
		Entry("leading zero compares lexically", "01", "1", false, -1),
		Entry("1.0.0 > 1.0 without normalisation", "1.0.0", "1.0", false, 1),
		Entry("1.0.0 = 1.0 with ignoreTrailingZeroes", "1.0.0", "1.0", true, 0),
		// More.
		Entry("equal", "5.8-9.el9", "5.8-9.el9", false, 0),
		Entry("release numbers compare numerically", "5.8-9.el9", "5.8-10.el9", false, -1),
		Entry("hyphen loses to a dot", "1.0-1", "1.0.1", false, -1),
		Entry("dot loses to a letter", "1.0.1", "1.0a", false, -1),
		Entry("letters ignore case", "1.0a", "1.0A", false, 0),
		Entry("dist tags compare lexically", "3.0.7-27.el9", "3.0.7-27.fc39", false, -1),
		Entry("numbers beyond 64 bits", "1.99999999999999999999", "1.100000000000000000000", false, -1),
		Entry("leading zeros on both sides compare lexically", "1.010", "1.09", false, -1),
		Entry("rc after the trimmed zeros", "1.0.0-rc1", "1-rc1", true, 0),
		Entry("trailing zeros only before the release", "2.0.0-1.0", "2-1", true, 1),
		Entry("2.0.0 becomes 2", "2.0.0", "2", true, 0),
		Entry("10 is not trimmed to 1", "10", "1", true, 1),
		Entry("1.10 keeps its 10", "1.10", "1.1", true, 1),
		Entry("1.00 is a zero segment", "1.00", "1", true, 0),
		Entry("without the flag 1.0 > 1", "1.0", "1", false, 1),
		Entry("empty is smallest", "", "0", false, -1),
	)
})
