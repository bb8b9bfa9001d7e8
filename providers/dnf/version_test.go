package dnf_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/providers/dnf"
)

// rpmVerdictScript reads pairs "a<TAB>b" a line from the file named by
// the macro ccm_pairs and prints, a line each, rpm.vercmp(a, b) and the
// comparison of rpm.ver(a) with rpm.ver(b), each "err" where rpm refuses a
// string (an empty one, or a bad epoch). In rpm 4.18 both read the strings
// as whole versions, [epoch:]version[-release]; for strings without ":"
// and "-" that is rpmvercmp, rpm's comparison of plain version strings.
const rpmVerdictScript = `
local function cmp(x, y)
  if x < y then return -1 elseif x == y then return 0 else return 1 end
end
for line in io.lines(macros.ccm_pairs) do
  local a, b = line:match("^(.*)\t(.*)$")
  local ok, plain = pcall(rpm.vercmp, a, b)
  if not ok then plain = "err" end
  local ok, evr = pcall(function() return cmp(rpm.ver(a), rpm.ver(b)) end)
  if not ok then evr = "err" end
  io.write(plain, " ", evr, "\n")
end
`

// rpmVerdict is what rpm says of one pair: Plain from rpm.vercmp, EVR
// from comparing rpm.ver objects (PlainOK, EVROK false where rpm refused
// a string).
type rpmVerdict struct {
	Plain, EVR     int
	PlainOK, EVROK bool
}

// rpmSays asks the real rpm for its verdicts on pairs, in one rpm
// process.
func rpmSays(ctx context.Context, pairs [][2]string) []rpmVerdict {
	GinkgoHelper()
	_, err := exec.LookPath("rpm")
	Expect(err).NotTo(HaveOccurred(), "rpm is not installed: run make deps (as root) to install it")
	dir := GinkgoT().TempDir()
	var in strings.Builder
	for _, p := range pairs {
		Expect(strings.ContainsAny(p[0]+p[1], "\t\n")).To(BeFalse(), "%q", p)
		fmt.Fprintf(&in, "%s\t%s\n", p[0], p[1])
	}
	pairsFile := filepath.Join(dir, "pairs")
	Expect(os.WriteFile(pairsFile, []byte(in.String()), 0o644)).To(Succeed())
	script := filepath.Join(dir, "verdict.lua")
	Expect(os.WriteFile(script, []byte(rpmVerdictScript), 0o644)).To(Succeed())
	// rpm reads its options in order: the macros first, then the --eval.
	cmd := exec.CommandContext(ctx, "rpm", "--define", "ccm_pairs "+pairsFile,
		"--define", "ccm_script "+script, "--eval", "%{lua: dofile(macros.ccm_script)}")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	Expect(err).NotTo(HaveOccurred(), "rpm --eval of the comparison script: %s", stderr.String())
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	Expect(lines).To(HaveLen(len(pairs)), "one verdict a pair")
	verdicts := make([]rpmVerdict, len(lines))
	for i, line := range lines {
		plain, evr, ok := strings.Cut(line, " ")
		Expect(ok).To(BeTrue(), line)
		v := &verdicts[i]
		if plain != "err" {
			v.Plain, err = strconv.Atoi(plain)
			Expect(err).NotTo(HaveOccurred(), line)
			v.PlainOK = true
		}
		if evr != "err" {
			v.EVR, err = strconv.Atoi(evr)
			Expect(err).NotTo(HaveOccurred(), line)
			v.EVROK = true
		}
	}
	return verdicts
}

// versionAlphabet is what generated versions are made of: digits
// (zero often, for leading zeros), letters of both cases, rpm's
// separators and the two bytes it treats specially.
const versionAlphabet = "0001123456789aAbBzZ..-_+~^:"

// generatedPairs makes n pairs of versions from a fixed seed: random
// strings; epoch:version-release strings made of random parts; and random
// edits of either, which share a prefix with the original and so reach
// the later rules.
func generatedPairs(n int) [][2]string {
	r := rand.New(rand.NewPCG(40, 3))
	word := func(alphabet string) string {
		var b strings.Builder
		for range 1 + r.IntN(8) {
			b.WriteByte(alphabet[r.IntN(len(alphabet))])
		}
		return b.String()
	}
	plain := strings.NewReplacer(":", "", "-", "").Replace(versionAlphabet)
	evr := func() string {
		v := word(plain)
		if r.IntN(2) == 0 {
			v = strconv.Itoa(r.IntN(3)) + ":" + v
		}
		if r.IntN(4) != 0 {
			v += "-" + word(plain)
		}
		return v
	}
	pairs := make([][2]string, 0, n)
	for len(pairs) < n {
		var a, b string
		switch r.IntN(3) {
		case 0:
			a, b = word(versionAlphabet), word(versionAlphabet)
		case 1:
			a, b = evr(), evr()
		default:
			a = evr()
		}
		if b == "" {
			// b is a with one byte changed, added or dropped.
			buf := []byte(a)
			i := r.IntN(len(buf))
			c := versionAlphabet[r.IntN(len(versionAlphabet))]
			switch r.IntN(3) {
			case 0:
				buf[i] = c
			case 1:
				buf = append(buf[:i], append([]byte{c}, buf[i:]...)...)
			default:
				buf = append(buf[:i], buf[i+1:]...)
			}
			b = string(buf)
		}
		pairs = append(pairs, [2]string{a, b})
	}
	return pairs
}

var _ = Describe("VersionCmp", func() {
	// Each row also goes to the real rpm: the expectations are rpm's.
	DescribeTable("compares versions as rpm does",
		func(ctx context.Context, a, b string, ignoreTrailingZeroes bool, want int) {
			Expect(dnf.VersionCmp(a, b, ignoreTrailingZeroes)).To(Equal(want), "%s vs %s", a, b)
			Expect(dnf.VersionCmp(b, a, ignoreTrailingZeroes)).To(Equal(-want), "%s vs %s", b, a)
			if !ignoreTrailingZeroes {
				v := rpmSays(ctx, [][2]string{{a, b}})[0]
				Expect(v.EVROK).To(BeTrue(), "rpm.ver refused %q or %q", a, b)
				Expect(v.EVR).To(Equal(want), "rpm says %s vs %s", a, b)
			}
		},
		// The rules: epoch, then version, then release; in each, digit
		// runs compare as numbers, letter runs byte by byte, digits beat
		// letters, other bytes only separate, ~ sorts before the end and
		// ^ after it, and the string with runs left over is newer.
		Entry("numeric 1 < 2", "1.0", "2.0", false, -1),
		Entry("numeric 10 > 9", "1.10", "1.9", false, 1),
		Entry("more segments are newer: 1.0 < 1.0.1", "1.0", "1.0.1", false, -1),
		Entry("equal versions: the release decides", "1.0-1", "1.0-2", false, -1),
		Entry("letters byte by byte: a < b", "1.0a", "1.0b", false, -1),
		Entry("leading zeros do not count", "01", "1", false, 0),
		Entry("1.0.0 > 1.0", "1.0.0", "1.0", false, 1),
		Entry("1.0.0 = 1.0 with ignoreTrailingZeroes", "1.0.0", "1.0", true, 0),
		Entry("tilde before the end: a pre-release", "1.0~rc1", "1.0", false, -1),
		Entry("tilde before tilde-less anything", "1.0~rc1", "1.0.1~", false, -1),
		Entry("caret after the end: a snapshot after the release", "1.0^git1", "1.0", false, 1),
		Entry("caret before a further segment", "1.0^git1", "1.0.1", false, -1),
		Entry("tilde before caret", "1.0~rc1", "1.0^git1", false, -1),
		Entry("digits beat letters", "1.0.1", "1.0.a", false, 1),
		Entry("separators only separate: 1_0 = 1.0", "1_0", "1.0", false, 0),
		Entry("runs of separators count as one", "1..0", "1.0", false, 0),
		Entry("epoch before everything", "1:1.0", "9.9", false, 1),
		Entry("a missing epoch is 0", "0:1.0-1", "1.0-1", false, 0),
		Entry("epochs compare as numbers", "9:1", "10:0", false, -1),
		Entry("a missing release is older", "1.0", "1.0-1", false, -1),
		// More.
		Entry("equal", "5.8-9.el9", "5.8-9.el9", false, 0),
		Entry("release numbers compare numerically", "5.8-9.el9", "5.8-10.el9", false, -1),
		Entry("letters are case-sensitive, upper first", "1.0A", "1.0a", false, -1),
		Entry("dist tags compare by letters", "3.0.7-27.el9", "3.0.7-27.fc39", false, -1),
		Entry("numbers beyond 64 bits", "1.99999999999999999999", "1.100000000000000000000", false, -1),
		Entry("leading zeros on both sides", "1.010", "1.09", false, 1),
		Entry("a letter after the number is newer", "1.0a", "1.0", false, 1),
		Entry("the release is after the last hyphen", "1.0-beta-2", "1.0-beta-10", false, -1),
		Entry("a colon after a non-digit starts no epoch", "1.0:2", "1.0", false, 1),
		Entry("upgrade across an epoch with a lower version", "2:1.0-1", "3:0.5-1", false, -1),
		Entry("backport release before the release", "7.4-1~bpo1", "7.4-1", false, -1),
		Entry("1.00 is one zero segment with the flag", "1.00", "1", true, 0),
		Entry("a release after the trimmed zeros", "1.0.0-1", "1-1", true, 0),
		Entry("a tilde keeps the zero before it", "1.0.0~rc1", "1.0~rc1", true, 1),
		Entry("trailing zeros only in the version, not the release", "2.0.0-1.0", "2-1", true, 1),
		Entry("10 is not trimmed to 1", "10", "1", true, 1),
		Entry("1.10 keeps its 10", "1.10", "1.1", true, 1),
		Entry("an epoch survives the trimming", "1:2.0.0-1", "1:2-1", true, 0),
	)

	It("agrees with rpm's own comparison on generated pairs", func(ctx context.Context) {
		pairs := generatedPairs(600)
		verdicts := rpmSays(ctx, pairs)
		var disagree []string
		plainChecked, evrChecked := 0, 0
		for i, p := range pairs {
			v := verdicts[i]
			if v.PlainOK && !strings.ContainsAny(p[0]+p[1], ":-") {
				plainChecked++
				if got := dnf.Vercmp(p[0], p[1]); got != v.Plain {
					disagree = append(disagree, fmt.Sprintf("Vercmp(%q, %q) = %d, rpm.vercmp says %d", p[0], p[1], got, v.Plain))
				}
			}
			if v.PlainOK {
				if got := dnf.VersionCmp(p[0], p[1], false); got != v.Plain {
					disagree = append(disagree, fmt.Sprintf("VersionCmp(%q, %q) = %d, rpm.vercmp says %d", p[0], p[1], got, v.Plain))
				}
			}
			if !v.EVROK {
				continue
			}
			evrChecked++
			if got := dnf.VersionCmp(p[0], p[1], false); got != v.EVR {
				disagree = append(disagree, fmt.Sprintf("VersionCmp(%q, %q) = %d, rpm.ver says %d", p[0], p[1], got, v.EVR))
			}
		}
		Expect(disagree).To(BeEmpty())
		Expect(plainChecked).To(BeNumerically(">", 100), "pairs of plain versions")
		Expect(evrChecked).To(BeNumerically(">", len(pairs)*2/3), "most pairs are versions rpm.ver reads")
		AddReportEntry("compared with rpm", fmt.Sprintf("%d pairs; %d of plain versions with Vercmp, %d as whole versions with VersionCmp", len(pairs), plainChecked, evrChecked))
	})

	DescribeTable("splits a version as rpm does",
		func(s string, want dnf.EVR) {
			Expect(dnf.ParseEVR(s)).To(Equal(want))
		},
		Entry("version only", "1.0", dnf.EVR{Version: "1.0"}),
		Entry("all three", "2:1.0-3.el9", dnf.EVR{Epoch: "2", Version: "1.0", Release: "3.el9"}),
		Entry("release after the last hyphen", "1.0-beta-1", dnf.EVR{Version: "1.0-beta", Release: "1"}),
		Entry("an empty epoch", ":1.0", dnf.EVR{Version: "1.0"}),
		Entry("no epoch after a letter", "a:1.0", dnf.EVR{Version: "a:1.0"}),
	)
})
