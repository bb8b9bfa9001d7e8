package fileposix_test

import (
	"context"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/providers/fileposix"
	"github.com/ccm-fleet/ccm/resources/filetype"
)

// nobody is the uid a planted link is given: an unprivileged user's.
const nobody = 65534

var _ = Describe("links planted in the parent path", func() {
	var (
		ctx     context.Context
		shared  string // a directory anyone could write to, like /tmp
		victim  string // where a planted link points: something root owns
		prov    *fileposix.Provider
		planted string
	)

	BeforeEach(func() {
		if os.Geteuid() != 0 {
			Fail("these specs give a link to another user, which needs root")
		}
		ctx = context.Background()
		shared = GinkgoT().TempDir()
		Expect(os.Chmod(shared, 0o1777)).To(Succeed())
		victim = GinkgoT().TempDir()
		Expect(os.WriteFile(filepath.Join(victim, "shadow"), []byte("precious"), 0o600)).To(Succeed())
		prov = fileposix.New(nil)
		// an unprivileged user plants shared/app -> victim
		planted = filepath.Join(shared, "app")
		Expect(os.Symlink(victim, planted)).To(Succeed())
		Expect(os.Lchown(planted, nobody, nobody)).To(Succeed())
	})

	unchanged := func() {
		GinkgoHelper()
		Expect(os.ReadFile(filepath.Join(victim, "shadow"))).To(Equal([]byte("precious")))
		Expect(listDir(victim)).To(ConsistOf("shadow"))
	}

	It("refuses to store a file through another user's link", func() {
		err := prov.Store(ctx, filepath.Join(planted, "shadow"), []byte("evil"), "", "root", "root", "0644")
		Expect(err).To(MatchError(filetype.ErrSymlink))
		Expect(err).To(MatchError(ContainSubstring("owned by uid 65534")))
		unchanged()
		err = prov.Store(ctx, filepath.Join(planted, "new"), []byte("evil"), "", "root", "root", "0644")
		Expect(err).To(MatchError(filetype.ErrSymlink))
		unchanged()
	})

	It("refuses to create a directory, set attributes or remove through it", func() {
		Expect(prov.CreateDirectory(ctx, filepath.Join(planted, "sub"), "root", "root", "0755")).To(MatchError(filetype.ErrSymlink))
		Expect(prov.SetAttributes(ctx, filepath.Join(planted, "shadow"), "root", "root", "0644")).To(MatchError(filetype.ErrSymlink))
		Expect(prov.Remove(ctx, filepath.Join(planted, "shadow"), false)).To(MatchError(filetype.ErrSymlink))
		unchanged()
		Expect(statT(filepath.Join(victim, "shadow")).Mode & 0o777).To(Equal(uint32(0o600)))
	})

	It("refuses a root link whose target passes through another user's link", func() {
		chain := filepath.Join(GinkgoT().TempDir(), "chain")
		Expect(os.Symlink(filepath.Join(planted, "."), chain)).To(Succeed()) // root's link -> planted -> victim
		Expect(prov.Store(ctx, filepath.Join(chain, "shadow"), []byte("evil"), "", "root", "root", "0644")).To(MatchError(filetype.ErrSymlink))
		unchanged()
	})

	It("follows links root owns, as /var/run -> /run", func() {
		Expect(os.Lchown(planted, 0, 0)).To(Succeed())
		Expect(prov.Store(ctx, filepath.Join(planted, "new"), []byte("ok"), "", "root", "root", "0644")).To(Succeed())
		Expect(os.ReadFile(filepath.Join(victim, "new"))).To(Equal([]byte("ok")))
	})

	It("refuses a loop of links with a clear error", func() {
		a, b := filepath.Join(shared, "a"), filepath.Join(shared, "b")
		Expect(os.Symlink(b, a)).To(Succeed())
		Expect(os.Symlink(a, b)).To(Succeed())
		Expect(prov.Store(ctx, filepath.Join(a, "x"), []byte("x"), "", "root", "root", "0644")).To(HaveOccurred())
	})
})
