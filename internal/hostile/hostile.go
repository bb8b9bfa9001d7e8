package hostile

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// AliasBomb is a YAML document of 9 levels of anchors, each a list
// aliasing the previous level 9 times: 9^9 (387 million) strings once
// expanded. With top it is the value of key top ("top:\n  a0: ..."),
// without it the levels are the document's own keys.
func AliasBomb(top string) []byte {
	ind := ""
	var b strings.Builder
	if top != "" {
		b.WriteString(top + ":\n")
		ind = "  "
	}
	b.WriteString(ind + `a0: &a0 ["x","x","x","x","x","x","x","x","x"]` + "\n")
	for i := 1; i < 9; i++ {
		refs := strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*a%d, ", i-1), 9), ", ")
		fmt.Fprintf(&b, "%sa%d: &a%d [%s]\n", ind, i, i, refs)
	}
	return []byte(b.String())
}

// Strings is n strings of up to maxLen bytes each, every byte drawn from
// alphabet's bytes (a multi-byte character is split, so some strings are
// invalid UTF-8), the same for the same seed: for checking a hand-written
// validator against the expression or function it replaced.
func Strings(seed uint64, n, maxLen int, alphabet string) []string {
	r := rand.New(rand.NewPCG(seed, seed))
	out := make([]string, n)
	for i := range out {
		b := make([]byte, r.IntN(maxLen+1))
		for j := range b {
			b[j] = alphabet[r.IntN(len(alphabet))]
		}
		out[i] = string(b)
	}
	return out
}

// Compare answers every case with check and with oracle (the expression
// or function check replaced). It returns the first case they answer
// differently (same is false then), and how many cases oracle accepts, so
// a test can also tell that its cases exercise both answers.
func Compare(cases []string, check, oracle func(string) bool) (differ string, same bool, accepted int) {
	for _, c := range cases {
		want := oracle(c)
		if check(c) != want {
			return c, false, accepted
		}
		if want {
			accepted++
		}
	}
	return "", true, accepted
}
