package manifest

import (
	"regexp"
	"strings"

	g "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/internal/hostile"
)

var _ = g.Describe("isHostnameLabel", func() {
	// the expression it replaced is the oracle
	label := regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$`)

	g.It("answers like the regular expression on edge cases and on random strings", func() {
		cases := []string{"", "a", "-", "a-", "-a", "a-b", "a--b", "A9", "é", "a\n", "a.b", "a_b",
			strings.Repeat("a", 63), strings.Repeat("a", 64), "a" + strings.Repeat("-", 61) + "b",
			"a" + strings.Repeat("-", 62) + "b", "xn--bcher-kva", " a", "a "}
		cases = append(cases, hostile.Strings(1, 20000, 69, "aZ09-_. é\n")...)
		differ, same, accepted := hostile.Compare(cases, isHostnameLabel, label.MatchString)
		Expect(same).To(BeTrue(), "%q", differ)
		Expect(accepted).To(BeNumerically(">", 10), "the cases exercise both answers")
	})
})
