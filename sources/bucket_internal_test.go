package sources

import (
	"regexp"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/internal/hostile"
)

var _ = Describe("validBucket", func() {
	// the expression it replaced is the oracle
	bucket := regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

	It("answers like the regular expression on edge cases and on random strings", func() {
		cases := []string{"", "a", "-", "_", "a.b", "a b", "é", "a\n", "A-z_9",
			strings.Repeat("a", 64), strings.Repeat("a", 65)}
		cases = append(cases, hostile.Strings(3, 20000, 69, "aZ09-_. é\n/")...)
		differ, same, accepted := hostile.Compare(cases, validBucket, bucket.MatchString)
		Expect(same).To(BeTrue(), "%q", differ)
		Expect(accepted).To(BeNumerically(">", 10), "the cases exercise both answers")
	})
})
