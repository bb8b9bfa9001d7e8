package archivehttp_test

import (
	"context"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/resources/filetype"
)

var _ = Describe("Provider Remove", func() {
	ctx := context.Background()

	It("removes the archive file; a missing one is not an error", func() {
		p, _ := newProvider()
		dir := GinkgoT().TempDir()
		pr := props(dir, "app.tgz", "http://127.0.0.1/app.tgz")
		Expect(os.WriteFile(pr.Name, []byte("x"), 0o600)).To(Succeed())
		Expect(p.Remove(ctx, pr)).To(Succeed())
		Expect(pr.Name).ToNot(BeAnExistingFile())
		Expect(p.Remove(ctx, pr)).To(Succeed())
		Expect(p.Remove(ctx, props(filepath.Join(dir, "missing"), "app.tgz", "http://127.0.0.1/app.tgz"))).To(Succeed())
	})

	It("never removes a directory", func() {
		p, _ := newProvider()
		dir := GinkgoT().TempDir()
		pr := props(dir, "app.tgz", "http://127.0.0.1/app.tgz")
		Expect(os.Mkdir(pr.Name, 0o700)).To(Succeed())
		Expect(p.Remove(ctx, pr)).To(MatchError(ContainSubstring("is a directory")))
		Expect(pr.Name).To(BeADirectory())
	})

	It("refuses a way through a link another user planted, removing nothing behind it", func() {
		p, _ := newProvider()
		dir := GinkgoT().TempDir()
		goal := filepath.Join(dir, "goal")
		Expect(os.Mkdir(goal, 0o700)).To(Succeed())
		victim := filepath.Join(goal, "app.tgz")
		Expect(os.WriteFile(victim, []byte("keep"), 0o600)).To(Succeed())
		link := filepath.Join(dir, "planted")
		Expect(os.Symlink(goal, link)).To(Succeed())
		Expect(os.Lchown(link, 65534, 65534)).To(Succeed())
		err := p.Remove(ctx, props(link, "app.tgz", "http://127.0.0.1/app.tgz"))
		Expect(err).To(MatchError(filetype.ErrSymlink))
		Expect(victim).To(BeAnExistingFile())
	})
})
