package apt_test

import (
	"context"
	"os/exec"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/providers/apt"
)

// dpkgSays asks the real dpkg how a compares with b, or "" when dpkg is
// not installed.
func dpkgSays(ctx context.Context, a, b string) int {
	for _, c := range []struct {
		op   string
		want int
	}{{"lt", -1}, {"eq", 0}, {"gt", 1}} {
		err := exec.CommandContext(ctx, "dpkg", "--compare-versions", a, c.op, b).Run()
		if err == nil {
			return c.want
		}
		var exit *exec.ExitError
		Expect(err).To(BeAssignableToTypeOf(exit), "dpkg --compare-versions %s %s %s", a, c.op, b)
	}
	Fail("dpkg found " + a + " neither lt, eq nor gt " + b)
	return 0
}

var _ = Describe("Debian versions", func() {
	DescribeTable("parse into epoch (before the first colon), upstream version and revision (after the last hyphen, when one follows)",
		func(s string, epoch int, upstream, revision, canonical string) {
			v, err := apt.ParseVersion(s)
			Expect(err).NotTo(HaveOccurred())
			Expect(v).To(Equal(apt.Version{Epoch: epoch, Upstream: upstream, Revision: revision}))
			Expect(v.String()).To(Equal(canonical))
		},
		Entry("1.0", "1.0", 0, "1.0", "", "1.0"),
		Entry("1:2.0-3", "1:2.0-3", 1, "2.0", "3", "1:2.0-3"),
		Entry("2:1.0.0+git-20190109-0ubuntu2", "2:1.0.0+git-20190109-0ubuntu2", 2, "1.0.0+git-20190109", "0ubuntu2", "2:1.0.0+git-20190109-0ubuntu2"),
		Entry("explicit zero epoch", "0:1.0-1", 0, "1.0", "1", "1.0-1"),
		Entry("colon in upstream after an epoch", "1:2.0:3-1", 1, "2.0:3", "1", "1:2.0:3-1"),
		Entry("tilde in revision", "3.32.2+git20190711-2ubuntu1~19.04.1", 0, "3.32.2+git20190711", "2ubuntu1~19.04.1", "3.32.2+git20190711-2ubuntu1~19.04.1"),
		Entry("binNMU", "5.9-4+b15", 0, "5.9", "4+b15", "5.9-4+b15"),
		Entry("trailing hyphen stays upstream", "1.0-", 0, "1.0-", "", "1.0-"),
	)

	DescribeTable("refuse what is not a version",
		func(s string) {
			_, err := apt.ParseVersion(s)
			Expect(err).To(MatchError(apt.ErrInvalidVersion))
		},
		Entry("empty", ""),
		Entry("non-numeric epoch", "a:1.0"),
		Entry("empty epoch", ":1.0"),
		Entry("huge epoch", "99999999999:1.0"),
		Entry("empty upstream", "1:-1"),
		Entry("invalid character", "1.0!"),
		Entry("space", "1.0 1"),
		Entry("colon in revision", "1:1.0-1:2"),
		Entry("underscore", "1_0"),
		Entry("non-ASCII", "1.0\u2010"),
	)

	// One row per comparison rule first, then edge cases. Every row is also
	// put to the real dpkg when it is installed and accepts both versions.
	DescribeTable("compare like dpkg",
		func(ctx context.Context, a, b string, want int, dpkgAccepts bool) {
			got, err := apt.CompareVersions(a, b)
			Expect(err).NotTo(HaveOccurred())
			Expect(got).To(Equal(want), "%s vs %s", a, b)

			back, err := apt.CompareVersions(b, a)
			Expect(err).NotTo(HaveOccurred())
			Expect(back).To(Equal(-want), "%s vs %s", b, a)

			if _, err := exec.LookPath("dpkg"); err == nil && dpkgAccepts {
				Expect(dpkgSays(ctx, a, b)).To(Equal(want), "dpkg --compare-versions %s %s", a, b)
			}
		},
		// The rules: epoch first, then upstream version, then revision; in
		// each, digit runs compare as numbers and the rest character by
		// character, ~ before everything (the end included), letters before
		// other characters.
		Entry("digit runs compare as numbers", "1.0", "2.0", -1, true),
		Entry("epoch 1 beats epoch 0", "1:1.0", "2.0", 1, true),
		Entry("tilde sorts before the end", "1.0~alpha", "1.0", -1, true),
		Entry("letters compare by character: alpha < beta", "1.0~alpha", "1.0~beta", -1, true),
		Entry("the first differing digit run decides: 1 < 2", "1.0.1", "1.0.2", -1, true),
		Entry("equal upstream versions: the revision decides", "1.0-1", "1.0-2", -1, true),
		// dpkg refuses 1.0- (empty revision); kept in the upstream version
		// the trailing hyphen shows a letter sorting before a non-letter.
		Entry("letters sort before non-letters", "1.0a", "1.0-", -1, false),
		Entry("more tildes are earlier", "1.0~~", "1.0~", -1, true),
		Entry("9 < 13 numerically, not by character", "1.9", "1.13", -1, true),
		// Edge cases.
		Entry("no revision equals revision 0", "1.0", "1.0-0", 0, true),
		Entry("binNMU is newer", "1.0+b1", "1.0", 1, true),
		Entry("higher epoch beats a higher version", "2:1.0", "1:9", 1, true),
		Entry("epochs compare as numbers", "9:99-99", "10:01-01", -1, true),
		Entry("explicit zero epoch", "0:1.0", "1.0", 0, true),
		Entry("leading zeros do not count", "1.00", "1.0", 0, true),
		Entry("numeric runs, not characters", "1.2.10", "1.2.9", 1, true),
		Entry("letters before non-letters", "1.0a", "1.0+", -1, true),
		Entry("letter before end is later", "1.0a", "1.0", 1, true),
		Entry("tilde before letter", "1.0~a", "1.0a", -1, true),
		Entry("release candidate before release", "2.0~rc1-1", "2.0-1", -1, true),
		Entry("backport before the release it backports", "5.9-4~bpo12+1", "5.9-4", -1, true),
		Entry("security update is newer", "1:9.2p1-2+deb12u3", "1:9.2p1-2+deb12u2", 1, true),
		Entry("plus sorts before dot (ASCII)", "1.0+1", "1.0.1", -1, true),
		Entry("case matters, upper first", "1.0A", "1.0a", -1, true),
		Entry("longer revision is greater", "1.0-abd", "1.0-abde", -1, true),
		Entry("numbers beyond 64 bits", "1.99999999999999999999999", "1.100000000000000000000000", -1, true),
		Entry("equal", "2:1.0.0+git-20190109-0ubuntu2", "2:1.0.0+git-20190109-0ubuntu2", 0, true),
		Entry("hyphen in upstream", "1.0-beta-1", "1.0-1", 1, true),
	)

	It("reports which version is invalid", func() {
		_, err := apt.CompareVersions("1.0", "x:1")
		Expect(err).To(MatchError(apt.ErrInvalidVersion))
		Expect(err).To(MatchError(ContainSubstring(`"x:1"`)))
	})
})
