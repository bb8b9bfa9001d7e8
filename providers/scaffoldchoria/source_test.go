package scaffoldchoria_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/providers/scaffoldchoria"
	"github.com/ccm-fleet/ccm/resources/filetype"
	"github.com/ccm-fleet/ccm/resources/scaffoldtype"
)

var _ = Describe("the source a scaffold renders", func() {
	const canary = "scaffold-source-canary-e5c1"
	var (
		ctx                    context.Context
		prov                   *scaffoldchoria.Provider
		dir, source, target, s string
	)

	BeforeEach(func() {
		ctx = context.Background()
		prov = scaffoldchoria.New(nil)
		dir = GinkgoT().TempDir()
		source = filepath.Join(dir, "src")
		target = filepath.Join(dir, "out")
		s = filepath.Join(dir, "secret")
		Expect(os.WriteFile(s, []byte(canary), 0o600)).To(Succeed())
	})

	rendered := func() string {
		var all []string
		_ = filepath.WalkDir(target, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				b, _ := os.ReadFile(p)
				all = append(all, string(b))
			}
			return nil
		})
		return strings.Join(all, "\n")
	}

	It("refuses a link below the source, a partial included, rendering nothing", func() {
		writeTree(source, map[string]string{"app.conf": `[[ render("_partials/p", .) ]]`})
		Expect(os.MkdirAll(filepath.Join(source, "_partials"), 0o755)).To(Succeed())
		Expect(os.Symlink(s, filepath.Join(source, "_partials", "p"))).To(Succeed())
		_, err := prov.Scaffold(ctx, testEnv(), newProps(target, source, scaffoldtype.EngineJet), false)
		Expect(err).To(MatchError(scaffoldchoria.ErrSourceTree))
		Expect(err).To(MatchError(ContainSubstring("only directories and regular files")))
		Expect(rendered()).ToNot(ContainSubstring(canary))
	})

	It("refuses a source reached through a link another user owns", func() {
		writeTree(source, map[string]string{"app.conf": "x"})
		user := filepath.Join(dir, "user")
		Expect(os.Mkdir(user, 0o755)).To(Succeed())
		Expect(os.Chown(user, 65534, 65534)).To(Succeed())
		link := filepath.Join(user, "tmpl")
		Expect(os.Symlink(source, link)).To(Succeed())
		Expect(os.Lchown(link, 65534, 65534)).To(Succeed())
		_, err := prov.Scaffold(ctx, testEnv(), newProps(target, link, scaffoldtype.EngineJet), false)
		Expect(err).To(MatchError(filetype.ErrSymlink))
		Expect(target).ToNot(BeADirectory())
	})

	It("renders a copy: partials and nested directories as before", func() {
		writeTree(source, map[string]string{"_partials/h": "head", "a/b/app.conf": `[[ render("_partials/h", .) ]]-body`})
		_, err := prov.Scaffold(ctx, testEnv(), newProps(target, source, scaffoldtype.EngineJet), false)
		Expect(err).ToNot(HaveOccurred())
		Expect(os.ReadFile(filepath.Join(target, "a", "b", "app.conf"))).To(Equal([]byte("head-body")))
	})
})
