package packaging_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/internal/packaging"
)

var _ = Describe("PackageVersion", func() {
	DescribeTable("maps a build version to the package's version and prerelease",
		func(build, version, prerelease string) {
			v, pre := packaging.PackageVersion(build)
			Expect(v).To(Equal(version))
			Expect(pre).To(Equal(prerelease))
		},
		Entry("a release tag", "v1.2.3", "1.2.3", ""),
		Entry("a release without v", "1.2.3", "1.2.3", ""),
		Entry("a release candidate, split by nFPM", "v1.2.3-rc.1", "1.2.3-rc.1", ""),
		Entry("git describe of an untagged commit", "3b2d972", "0.0.0", "git.3b2d972"),
		Entry("a dirty tree", "3b2d972-dirty", "0.0.0", "git.3b2d972.dirty"),
		Entry("commits past a tag that is not a release", "nightly-4-g3b2d972", "0.0.0", "git.nightly.4.g3b2d972"),
		Entry("the default", "development", "0.0.0", "git.development"),
	)
})

var _ = Describe("Config", func() {
	DescribeTable("Validate refuses what Build cannot do",
		func(mutate func(*packaging.Config), want string) {
			c := packaging.Config{Root: ".", Out: "out", Version: "v1.0.0", Arches: []string{"amd64"}, Formats: []string{"deb"}}
			mutate(&c)
			err := c.Validate()
			if want == "" {
				Expect(err).NotTo(HaveOccurred())
				return
			}
			Expect(err).To(MatchError(packaging.ErrConfig))
			Expect(err).To(MatchError(ContainSubstring(want)))
		},
		Entry("complete", func(*packaging.Config) {}, ""),
		Entry("no root", func(c *packaging.Config) { c.Root = "" }, "no module root"),
		Entry("no version", func(c *packaging.Config) { c.Version = "" }, "no version"),
		Entry("no architecture", func(c *packaging.Config) { c.Arches = nil }, "no architecture"),
		Entry("an unsupported architecture", func(c *packaging.Config) { c.Arches = []string{"386"} }, `architecture "386"`),
		Entry("an unsupported format", func(c *packaging.Config) { c.Formats = []string{"apk"} }, `format "apk"`),
	)
})
