package scope

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// walkOnly is resolvePath without its one-call case.
func walkOnly(p string, followLast bool) (string, error) {
	fast := resolveFast
	resolveFast = func(string, bool) (string, bool) { return "", false }
	defer func() { resolveFast = fast }()
	return resolvePath(p, followLast)
}

var _ = Describe("resolvePath's one-call case", func() {
	It("gives the walk's answer for every kind of path", func() {
		root, err := filepath.EvalSymlinks(GinkgoT().TempDir())
		Expect(err).ToNot(HaveOccurred())
		Expect(os.MkdirAll(filepath.Join(root, "a", "b"), 0o755)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(root, "a", "file"), nil, 0o644)).To(Succeed())
		Expect(os.Symlink(filepath.Join(root, "a", "b"), filepath.Join(root, "a", "tob"))).To(Succeed())
		Expect(os.Symlink("b/../file", filepath.Join(root, "a", "tofile"))).To(Succeed())
		Expect(os.Symlink(filepath.Join(root, "a"), filepath.Join(root, "toa"))).To(Succeed())
		Expect(os.Symlink("missing", filepath.Join(root, "a", "dangling"))).To(Succeed())
		paths := []string{"/", "/etc", root, filepath.Join(root, "a"), filepath.Join(root, "a", "b"), filepath.Join(root, "a", "b", "new"),
			filepath.Join(root, "a", "file"), filepath.Join(root, "a", "file", "below"), filepath.Join(root, "a", "missing", "x"),
			filepath.Join(root, "a", "tob"), filepath.Join(root, "a", "tob", "x"), filepath.Join(root, "a", "tofile"),
			filepath.Join(root, "toa", "b"), filepath.Join(root, "toa", "tob", ".."), filepath.Join(root, "a", "dangling"),
			root + "/a//b/", root + "/a/./b", root + "/toa/../a/b", root + "/a/b/../file"}
		fast := 0
		for _, p := range paths {
			for _, follow := range []bool{false, true} {
				want, werr := walkOnly(p, follow)
				got, gerr := resolvePath(p, follow)
				Expect(fmt.Sprint(gerr)).To(Equal(fmt.Sprint(werr)), "%s follow=%v", p, follow)
				Expect(got).To(Equal(want), "%s follow=%v", p, follow)
				if _, ok := resolveNoLinks(p, follow); ok {
					fast++
				}
			}
		}
		Expect(fast).To(BeNumerically(">=", 12), "the plain paths take the one-call case")
		_, ok := resolveNoLinks(filepath.Join(root, "a", "tob"), true)
		Expect(ok).To(BeFalse(), "a link as the last component is the walk's")
		_, ok = resolveNoLinks(filepath.Join(root, "toa", "b"), false)
		Expect(ok).To(BeFalse(), "a link on the way is the walk's")
	})
})

// BenchmarkResolvePath resolves a file four levels deep, following its last
// component: the one-call case and the walk alone.
func BenchmarkResolvePath(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "files", "host")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	p := filepath.Join(dir, "motd")
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		b.Fatal(err)
	}
	b.Run("one-call", func(b *testing.B) {
		for b.Loop() {
			if _, err := resolvePath(p, true); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("walk", func(b *testing.B) {
		for b.Loop() {
			if _, err := walkOnly(p, true); err != nil {
				b.Fatal(err)
			}
		}
	})
}
