package doclinks_test

import (
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/internal/doclinks"
)

// repoDocs lists README.md and every docs/*.md of the repository, relative
// to its root.
func repoDocs(root string) []string {
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	Expect(err).NotTo(HaveOccurred())
	Expect(pages).NotTo(BeEmpty(), "the docs/ pages")
	docs := []string{"README.md"}
	for _, p := range pages {
		rel, err := filepath.Rel(root, p)
		Expect(err).NotTo(HaveOccurred())
		docs = append(docs, rel)
	}
	return docs
}

var _ = Describe("the project's documents", func() {
	root := filepath.Join("..", "..")

	It("resolve every relative link of README.md and docs/*.md to a file and a heading", func() {
		Expect(doclinks.Check(root, repoDocs(root))).To(Succeed())
	})

	It("keep the README short, with the two commands first and every page with a contents list", func() {
		readme, err := os.ReadFile(filepath.Join(root, "README.md"))
		Expect(err).NotTo(HaveOccurred())
		lines := strings.Split(string(readme), "\n")
		Expect(len(lines)).To(BeNumerically("<=", 150), "README.md is the front page: reference goes in docs/")
		first := strings.Join(lines[:min(30, len(lines))], "\n")
		Expect(first).To(And(ContainSubstring("make demo"), ContainSubstring("make test")))
		for _, internal := range []string{"-race", "fuzz", "cgroup", "chromedp", "ginkgo"} {
			Expect(first).NotTo(ContainSubstring(internal), "test internals stay off the first screen (docs/development.md)")
		}
		for _, page := range repoDocs(root) {
			text, err := os.ReadFile(filepath.Join(root, page))
			Expect(err).NotTo(HaveOccurred())
			Expect(string(text)).To(MatchRegexp(`(?m)^(\*\*Contents\*\*|## Contents)$`), page+" has a contents list")
		}
	})

	It("link README.md to every docs page, and every page back to README.md", func() {
		links, err := doclinks.Links(root, "README.md")
		Expect(err).NotTo(HaveOccurred())
		targets := map[string]bool{}
		for _, l := range links {
			targets[l.Target] = true
		}
		for _, page := range repoDocs(root)[1:] {
			Expect(targets).To(HaveKey(filepath.ToSlash(page)), "README.md links "+page)
			back, err := doclinks.Links(root, page)
			Expect(err).NotTo(HaveOccurred())
			Expect(back).To(ContainElement(HaveField("Target", "../README.md")), page+" links back")
		}
	})
})

var _ = Describe("Check", func() {
	var dir string

	write := func(name, text string) {
		p := filepath.Join(dir, name)
		Expect(os.MkdirAll(filepath.Dir(p), 0o755)).To(Succeed())
		Expect(os.WriteFile(p, []byte(text), 0o644)).To(Succeed())
	}

	BeforeEach(func() {
		dir = GinkgoT().TempDir()
		write("docs/page.md", "# Page\n\n## ccm-orch apply | audit\n\n## Keys\n\n## Keys\n\n```\n## not a heading\n```\n")
		write("docs/shot.png", "png")
		write("LICENSE", "licence")
	})

	DescribeTable("accepts links that resolve",
		func(text string) {
			write("README.md", text)
			Expect(doclinks.Check(dir, []string{"README.md"})).To(Succeed())
		},
		Entry("a file", "[page](docs/page.md)"),
		Entry("a file and a heading with punctuation", "[a](docs/page.md#ccm-orch-apply--audit)"),
		Entry("the second of two equal headings", "[k](docs/page.md#keys-1)"),
		Entry("an image", "![shot](docs/shot.png)"),
		Entry("a file without an extension", "[LICENSE](LICENSE)"),
		Entry("a heading of the same page", "# Top\n\n## Two words\n\nsee [there](#two-words)"),
		Entry("a link inside a code span", "`[x](missing.md)`"),
		Entry("a link inside a fenced block", "```\n[x](missing.md)\n```"),
		Entry("another site", "[cheat](https://github.com/cheat/cheat)"),
	)

	DescribeTable("names each link that does not resolve",
		func(text, want string) {
			write("README.md", text)
			err := doclinks.Check(dir, []string{"README.md"})
			Expect(err).To(MatchError(doclinks.ErrBroken))
			Expect(err.Error()).To(ContainSubstring(want))
		},
		Entry("a missing file", "text\n[x](docs/missing.md)", "README.md:2: docs/missing.md: no such file"),
		Entry("a missing heading", "[x](docs/page.md#nope)", "README.md:1: docs/page.md#nope: no heading with this anchor"),
		Entry("a third equal heading that does not exist", "[x](docs/page.md#keys-2)", "docs/page.md#keys-2: no heading"),
		Entry("a heading only inside a code block", "[x](docs/page.md#not-a-heading)", "no heading with this anchor"),
		Entry("a path relative to the wrong directory", "[x](page.md)", "page.md: no such file"),
		Entry("a missing heading of the same page", "# Top\n\n[x](#bottom)", "#bottom: no heading"),
		Entry("an anchor into an image", "[x](docs/shot.png#a)", "not a Markdown file"),
	)

	It("resolves a page's links against the page's own directory", func() {
		write("docs/other.md", "[back](../README.md) [shot](shot.png) [gone](../gone.md)")
		write("README.md", "# Readme\n")
		err := doclinks.Check(dir, []string{"docs/other.md"})
		Expect(err).To(MatchError(doclinks.ErrBroken))
		Expect(err.Error()).To(ContainSubstring("docs/other.md:1: ../gone.md: no such file"))
		Expect(err.Error()).NotTo(ContainSubstring("shot.png"))
		Expect(err.Error()).NotTo(ContainSubstring("README.md:"))
	})
})
