package sources

import (
	"math/rand/v2"
	"regexp"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("validBucket", func() {
	// the expression it replaced is the oracle
	bucket := regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

	It("answers like the regular expression on edge cases and on random strings", func() {
		cases := []string{"", "a", "-", "_", "a.b", "a b", "é", "a\n", "A-z_9",
			strings.Repeat("a", 64), strings.Repeat("a", 65)}
		alphabet := []byte("aZ09-_. é\n/")
		r := rand.New(rand.NewPCG(3, 4))
		for range 20000 {
			b := make([]byte, r.IntN(70))
			for i := range b {
				b[i] = alphabet[r.IntN(len(alphabet))]
			}
			cases = append(cases, string(b))
		}
		valid := 0
		for _, c := range cases {
			Expect(validBucket(c)).To(Equal(bucket.MatchString(c)), "%q", c)
			if bucket.MatchString(c) {
				valid++
			}
		}
		Expect(valid).To(BeNumerically(">", 10), "the cases exercise both answers")
	})
})
