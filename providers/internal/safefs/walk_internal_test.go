package safefs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"golang.org/x/sys/unix"

	"github.com/ccm-fleet/ccm/internal/nolinks"
)

// sameDir says whether two descriptors name the same directory.
func sameDir(a, b int) bool {
	var sa, sb unix.Stat_t
	Expect(unix.Fstat(a, &sa)).To(Succeed())
	Expect(unix.Fstat(b, &sb)).To(Succeed())
	return sa.Dev == sb.Dev && sa.Ino == sb.Ino
}

// walked is what the component-by-component walk alone makes of dir
// (the fast path bypassed), for comparison.
func walked(dir string) (*Dir, error) {
	fast := openFast
	openFast = func(string) (int, bool) { return -1, false }
	defer func() { openFast = fast }()
	return Open(dir)
}

var _ = Describe("Open's one-call path", func() {
	var root string
	BeforeEach(func() {
		// EvalSymlinks: the temporary directory itself may be reached
		// through a link on some machines.
		var err error
		root, err = filepath.EvalSymlinks(GinkgoT().TempDir())
		Expect(err).NotTo(HaveOccurred())
		Expect(os.MkdirAll(filepath.Join(root, "a", "b", "c"), 0o755)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(root, "a", "file"), nil, 0o644)).To(Succeed())
		Expect(os.Symlink(filepath.Join(root, "a", "b"), filepath.Join(root, "tob"))).To(Succeed())
		Expect(os.Symlink("b/c", filepath.Join(root, "a", "toc"))).To(Succeed())
	})

	It("opens a path without links in one call, the same directory and path the walk gives", func() {
		for _, dir := range []string{"/", root, filepath.Join(root, "a"), filepath.Join(root, "a", "b", "c"), filepath.Join(root, "a", "b", "..", "b", "c") + "/"} {
			fd, ok := nolinks.OpenDir(filepath.Clean(dir))
			Expect(ok).To(BeTrue(), dir)
			fast, err := Open(dir)
			Expect(err).NotTo(HaveOccurred())
			slow, err := walked(dir)
			Expect(err).NotTo(HaveOccurred())
			Expect(sameDir(fd, slow.fd)).To(BeTrue(), dir)
			Expect(sameDir(fast.fd, slow.fd)).To(BeTrue(), dir)
			Expect(fast.Path()).To(Equal(slow.Path()), dir)
			Expect(unix.Close(fd)).To(Succeed())
			Expect(fast.Close()).To(Succeed())
			Expect(slow.Close()).To(Succeed())
		}
	})

	It("leaves any link on the way to the walk, which follows a trusted one to the same place", func() {
		for _, dir := range []string{filepath.Join(root, "tob"), filepath.Join(root, "tob", "c"), filepath.Join(root, "a", "toc")} {
			_, ok := nolinks.OpenDir(dir)
			Expect(ok).To(BeFalse(), dir)
			d, err := Open(dir)
			Expect(err).NotTo(HaveOccurred(), dir)
			want, err := walked(dir)
			Expect(err).NotTo(HaveOccurred())
			Expect(sameDir(d.fd, want.fd)).To(BeTrue(), dir)
			Expect(d.Path()).To(Equal(want.Path()))
			Expect(d.Path()).NotTo(Equal(dir), "the walk's path is where the link led")
			Expect(d.Close()).To(Succeed())
			Expect(want.Close()).To(Succeed())
		}
	})

	It("still refuses a link another user owns", func() {
		if os.Geteuid() != 0 {
			Skip("needs root to give a link to another user")
		}
		link := filepath.Join(root, "theirs")
		Expect(os.Symlink(filepath.Join(root, "a"), link)).To(Succeed())
		Expect(os.Lchown(link, 65534, 65534)).To(Succeed())
		_, err := Open(filepath.Join(link, "b"))
		var le *LinkError
		Expect(errors.As(err, &le)).To(BeTrue(), "%v", err)
		Expect(le.Link).To(Equal(link))
		Expect(le.UID).To(Equal(65534))
	})

	It("gives the walk's errors for a missing component and a file on the way", func() {
		_, err := Open(filepath.Join(root, "a", "missing", "x"))
		Expect(err).To(MatchError(fs.ErrNotExist))
		Expect(err.Error()).To(ContainSubstring(filepath.Join(root, "a", "missing")))
		_, err = Open(filepath.Join(root, "a", "file", "x"))
		Expect(errors.Is(err, syscall.ENOTDIR)).To(BeTrue(), "%v", err)
		Expect(err.Error()).To(ContainSubstring(filepath.Join(root, "a", "file")))
	})

	It("creates what is missing through the walk", func() {
		d, err := MkdirAll(filepath.Join(root, "a", "new", "deeper"), 0o750)
		Expect(err).NotTo(HaveOccurred())
		Expect(d.Close()).To(Succeed())
		Expect(filepath.Join(root, "a", "new", "deeper")).To(BeADirectory())
	})
})

// BenchmarkOpen opens a directory five levels below "/" without links: the
// one-call path, and the walk alone.
func BenchmarkOpen(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "fleet", "files", "host")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	run := func(b *testing.B) {
		for b.Loop() {
			d, err := Open(dir)
			if err != nil {
				b.Fatal(err)
			}
			_ = d.Close()
		}
	}
	b.Run("one-call", run)
	b.Run("walk", func(b *testing.B) {
		fast := openFast
		openFast = func(string) (int, bool) { return -1, false }
		defer func() { openFast = fast }()
		run(b)
	})
}
