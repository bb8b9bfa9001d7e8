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

var _ = Describe("reading a source through handles", func() {
	const canary = "source-handle-canary-90ab"
	var (
		ctx                    context.Context
		dir, secret, user, out string
		prov                   *fileposix.Provider
	)

	BeforeEach(func() {
		ctx = context.Background()
		dir = GinkgoT().TempDir()
		secret = filepath.Join(dir, "secret")
		Expect(os.WriteFile(secret, []byte(canary), 0o600)).To(Succeed())
		// A directory another user owns, where that user plants links.
		user = filepath.Join(dir, "user")
		Expect(os.Mkdir(user, 0o755)).To(Succeed())
		Expect(os.Chown(user, 65534, 65534)).To(Succeed())
		out = filepath.Join(dir, "out")
		prov = fileposix.New(nil)
	})

	It("refuses a link another user owns at the source, storing nothing", func() {
		link := filepath.Join(user, "src")
		Expect(os.Symlink(secret, link)).To(Succeed())
		Expect(os.Lchown(link, 65534, 65534)).To(Succeed())
		err := prov.Store(ctx, out, nil, link, "root", "root", "0644")
		Expect(err).To(MatchError(filetype.ErrSymlink))
		Expect(out).ToNot(BeAnExistingFile())
		_, err = prov.OpenSource(ctx, link)
		Expect(err).To(MatchError(filetype.ErrSymlink))
	})

	It("refuses a directory link another user owns on the way to the source", func() {
		link := filepath.Join(user, "dir")
		Expect(os.Symlink(dir, link)).To(Succeed())
		Expect(os.Lchown(link, 65534, 65534)).To(Succeed())
		Expect(prov.Store(ctx, out, nil, filepath.Join(link, "secret"), "root", "root", "0644")).To(MatchError(filetype.ErrSymlink))
		Expect(out).ToNot(BeAnExistingFile())
	})

	It("follows links root owns, relative ones from their own directory", func() {
		Expect(os.Mkdir(filepath.Join(dir, "a"), 0o755)).To(Succeed())
		Expect(os.Symlink("../secret", filepath.Join(dir, "a", "rel"))).To(Succeed())
		Expect(os.Symlink(filepath.Join(dir, "a", "rel"), filepath.Join(dir, "abs"))).To(Succeed())
		Expect(prov.Store(ctx, out, nil, filepath.Join(dir, "abs"), "root", "root", "0600")).To(Succeed())
		Expect(os.ReadFile(out)).To(Equal([]byte(canary)))
	})

	It("refuses a link loop and anything but a regular file", func() {
		Expect(os.Symlink(filepath.Join(dir, "l2"), filepath.Join(dir, "l1"))).To(Succeed())
		Expect(os.Symlink(filepath.Join(dir, "l1"), filepath.Join(dir, "l2"))).To(Succeed())
		Expect(prov.Store(ctx, out, nil, filepath.Join(dir, "l1"), "root", "root", "0644")).ToNot(Succeed())
		Expect(prov.Store(ctx, out, nil, dir, "root", "root", "0644")).To(MatchError(filetype.ErrUnsupportedFileType))
		Expect(out).ToNot(BeAnExistingFile())
	})
})
