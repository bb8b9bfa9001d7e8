package codecheck_test

import (
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/internal/codecheck"
)

var _ = Describe("The repository's tracked files", func() {
	It("hold no built binary and nothing over 2 MiB outside testdata/", func() {
		files, err := codecheck.TrackedFiles("../..")
		Expect(err).NotTo(HaveOccurred())
		Expect(len(files)).To(BeNumerically(">", 100), "git lists the repository's files")
		found, err := codecheck.CheckTracked("../..", files)
		Expect(err).NotTo(HaveOccurred())
		Expect(found).To(BeEmpty(), "tracked:\n%s", strings.Join(found, "\n"))
	})

	It("reports an ELF file anywhere and a large file outside testdata/", func() {
		root := GinkgoT().TempDir()
		write := func(rel string, data []byte) {
			Expect(os.MkdirAll(filepath.Dir(filepath.Join(root, rel)), 0o755)).To(Succeed())
			Expect(os.WriteFile(filepath.Join(root, rel), data, 0o644)).To(Succeed())
		}
		elf := append([]byte{0x7f, 'E', 'L', 'F'}, make([]byte, 64)...)
		big := make([]byte, codecheck.MaxTrackedBytes+1)
		write("ccm-broker", elf)
		write("pkg/testdata/tool", elf)
		write("docs/huge.png", big)
		write("pkg/testdata/big.bin", big)
		write("README.md", []byte("small\n"))
		found, err := codecheck.CheckTracked(root, []string{"ccm-broker", "pkg/testdata/tool", "docs/huge.png", "pkg/testdata/big.bin", "README.md", "gone.txt"})
		Expect(err).NotTo(HaveOccurred())
		Expect(found).To(ConsistOf(
			"ccm-broker: a built binary (ELF); build it, do not track it",
			"pkg/testdata/tool: a built binary (ELF); build it, do not track it",
			ContainSubstring("docs/huge.png: 2097153 bytes, over the 2097152"),
		))
	})
})
