package packaging_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/internal/packaging"
)

// The .deb's documentation as Debian tools read it, from the package the
// packager builds (unpacked with dpkg-deb, nothing installed).
var _ = Describe("the ccm-fleet .deb's documentation", Label("real"), Ordered, func() {
	var root, deb string
	BeforeAll(func(sctx SpecContext) {
		ctx, cancel := context.WithTimeout(sctx, 20*time.Minute)
		defer cancel()
		deb, _ = buildPackages(ctx)
		root = GinkgoT().TempDir()
		run(ctx, "dpkg-deb", "-x", deb, root)
	})

	It("carries changelog.Debian.gz naming the version dpkg shows, gzipped as lintian expects", func(ctx SpecContext) {
		path := filepath.Join(root, packaging.DebChangelog)
		st, err := os.Stat(path)
		Expect(err).NotTo(HaveOccurred())
		Expect(st.Mode().Perm()).To(Equal(os.FileMode(0o644)))
		Expect(run(ctx, "dpkg-deb", "-c", deb)).To(ContainSubstring(" ." + packaging.DebChangelog + "\n"))

		data, err := os.ReadFile(path)
		Expect(err).NotTo(HaveOccurred())
		zr, err := gzip.NewReader(bytes.NewReader(data))
		Expect(err).NotTo(HaveOccurred())
		Expect(zr.Name).To(BeEmpty(), "gzip -n: no file name")
		Expect(zr.ModTime.IsZero()).To(BeTrue(), "gzip -n: no time")
		Expect(data[8]).To(Equal(byte(2)), "gzip -9: the header's maximum compression flag")

		text := filepath.Join(GinkgoT().TempDir(), "changelog")
		Expect(os.WriteFile(text, []byte(gunzip(path)), 0o644)).To(Succeed())
		parsed := run(ctx, "dpkg-parsechangelog", "-l", text)
		version := strings.TrimSpace(run(ctx, "dpkg-deb", "-f", deb, "Version"))
		Expect(version).To(Equal("9.8.7~test.1-1"))
		Expect(parsed).To(ContainSubstring("Source: ccm-fleet\n"))
		Expect(parsed).To(ContainSubstring("Version: " + version + "\n"))
		Expect(parsed).To(ContainSubstring("Distribution: unstable\n"))
		Expect(parsed).To(ContainSubstring("Maintainer: " + strings.TrimSpace(run(ctx, "dpkg-deb", "-f", deb, "Maintainer")) + "\n"))
		Expect(parsed).To(ContainSubstring("Date: Fri, 02 Jan 2026 03:04:05 +0000\n"))
		Expect(parsed).To(ContainSubstring("Built from CCM Fleet " + testVersion + ", commit " + testCommit + "."))
	})

	It("renders ccm-orch's exit codes with man, one code a paragraph", func(ctx SpecContext) {
		cmd := exec.CommandContext(ctx, "man", "--warnings", "-l", filepath.Join(root, "usr/share/man/man1/ccm-orch.1.gz"))
		cmd.Env = append(os.Environ(), "MANWIDTH=80", "MANPAGER=cat", "PAGER=cat", "MAN_KEEP_FORMATTING=")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		Expect(cmd.Run()).To(Succeed(), stderr.String())
		Expect(stderr.String()).To(BeEmpty(), "man's warnings")
		page := stdout.String()
		start := strings.Index(page, "Exit codes (when several hold: 1, 2, 3, 5, 0):\n")
		end := strings.Index(page, "\nOPTIONS\n")
		Expect(start).To(BeNumerically(">", 0), page)
		Expect(end).To(BeNumerically(">", start), page)
		list := page[start:end]

		// Each code starts a line of its own at the margin of the list,
		// its text in a column, and wrapped text stays in that column.
		item := regexp.MustCompile(`^ {7}(\d+) +(\S.*)$`)
		continued := regexp.MustCompile(`^ {14}\S`)
		var codes []string
		var texts []string
		for _, line := range strings.Split(list, "\n")[1:] {
			switch m := item.FindStringSubmatch(line); {
			case strings.TrimSpace(line) == "":
			case m != nil:
				codes = append(codes, m[1])
				texts = append(texts, m[2])
			default:
				Expect(line).To(MatchRegexp(continued.String()), "a wrapped line of an exit code's text, in its column:\n%s", list)
				texts[len(texts)-1] += " " + strings.TrimSpace(line)
			}
		}
		Expect(codes).To(Equal([]string{"0", "1", "2", "3", "4", "5", "130"}), list)
		Expect(strings.Join(strings.Fields(texts[4]), " ")).To(Equal("no host matched the filter"))
		Expect(strings.Join(strings.Fields(texts[6]), " ")).To(Equal(`interrupted (Ctrl-C) while waiting for replies: the hosts asked go on and record their results; the request id and "ccm-orch history show ID" are printed on stderr`))
	})
})
