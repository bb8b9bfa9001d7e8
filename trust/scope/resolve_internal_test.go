package scope

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/filetype"
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

var _ = Describe("A judgement's resolver", func() {
	It("resolves each path once per judgement and reads the host again in the next", func() {
		root := GinkgoT().TempDir()
		Expect(os.Mkdir(filepath.Join(root, "a"), 0o755)).To(Succeed())
		Expect(os.Mkdir(filepath.Join(root, "b"), 0o755)).To(Succeed())
		link := filepath.Join(root, "current")
		Expect(os.Symlink(filepath.Join(root, "a"), link)).To(Succeed())

		r := HostResolver().judgement()
		first, err := r.resolve(filepath.Join(link, "motd"), true)
		Expect(err).ToNot(HaveOccurred())
		Expect(first).To(Equal(filepath.Join(root, "a", "motd")))

		Expect(os.Remove(link)).To(Succeed())
		Expect(os.Symlink(filepath.Join(root, "b"), link)).To(Succeed())
		again, err := r.resolve(filepath.Join(link, "motd"), true)
		Expect(err).ToNot(HaveOccurred())
		Expect(again).To(Equal(first), "one judgement reads the host once")

		next, err := HostResolver().judgement().resolve(filepath.Join(link, "motd"), true)
		Expect(err).ToNot(HaveOccurred())
		Expect(next).To(Equal(filepath.Join(root, "b", "motd")), "the next judgement reads it again")
		plain, err := HostResolver().resolve(filepath.Join(link, "motd"), true)
		Expect(err).ToNot(HaveOccurred())
		Expect(plain).To(Equal(next), "a resolver outside a judgement keeps nothing")
	})

	It("keeps at most maxMemo paths", func() {
		r := HostResolver().judgement()
		for i := range maxMemo + 10 {
			_, err := r.resolve(fmt.Sprintf("/nonexistent-%d/x", i), true)
			Expect(err).ToNot(HaveOccurred())
		}
		Expect(r.memo).To(HaveLen(maxMemo))
	})
})

// BenchmarkJudgeFile judges a file resource as an agent does for a noop
// request (the file written, and read for the diff) against a scope of
// three allowed trees, a read tree and a denied one.
func BenchmarkJudgeFile(b *testing.B) {
	root := b.TempDir()
	www := filepath.Join(root, "srv", "www")
	if err := os.MkdirAll(filepath.Join(www, "site"), 0o755); err != nil {
		b.Fatal(err)
	}
	s, err := Compile(&Rules{File: &Files{Paths: []string{root + "/etc/", root + "/opt/", www + "/"}, ReadPaths: []string{www + "/"}}},
		&Rules{File: &Files{Paths: []string{www + "/secret/"}}}, []string{"file"})
	if err != nil {
		b.Fatal(err)
	}
	props := &filetype.Properties{CommonProperties: resources.CommonProperties{Name: filepath.Join(www, "site", "motd"), Ensure: "present"},
		Content: new("hello\n"), Owner: "root", Group: "root", Mode: "0644"}
	r := HostResolver()
	b.ReportAllocs()
	for b.Loop() {
		for _, d := range s.Resource(r, props, "posix") {
			if !d.Allowed {
				b.Fatalf("refused: %+v", d)
			}
		}
	}
}
