package scaffoldchoria_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/providers/scaffoldchoria"
	"github.com/ccm-fleet/ccm/resources/scaffoldtype"
	"github.com/ccm-fleet/ccm/resources/templates"
)

// Issue 39: scaffolds render in the template sandbox. A scaffold's
// template may not read the agent's environment or ask DNS (finding 2),
// recurse until the stack overflows (finding 1) or grow without bound
// (finding 6); each ends in an error naming what it passed, writing
// nothing.
var _ = Describe("Scaffolds in the template sandbox (issue 39)", func() {
	var (
		ctx    context.Context
		prov   *scaffoldchoria.Provider
		source string
		target string
	)
	BeforeEach(func() {
		ctx = context.Background()
		prov = scaffoldchoria.New(nil)
		source = filepath.Join(GinkgoT().TempDir(), "src")
		target = filepath.Join(GinkgoT().TempDir(), "etc", "app")
	})
	fails := func(engine string, files map[string]string, sentinel error, words string) error {
		GinkgoHelper()
		writeTree(source, files)
		for _, noop := range []bool{true, false} {
			_, err := prov.Scaffold(ctx, testEnv(), newProps(target, source, engine), noop)
			Expect(err).To(HaveOccurred())
			Expect(errors.Is(err, sentinel)).To(BeTrue(), "%v does not wrap %v", err, sentinel)
			Expect(err.Error()).To(ContainSubstring(words))
			Expect(target).NotTo(BeADirectory(), "nothing is written")
		}
		_, err := prov.Scaffold(ctx, testEnv(), newProps(target, source, engine), true)
		return err
	}

	It("refuses env, expandenv and getHostByName in Go templates, leaking nothing (finding 2)", func() {
		GinkgoT().Setenv("CCM_SANDBOX_CANARY", "canary-scaffold-env-7c1e")
		for _, body := range []string{`home={{ env "HOME" }}`, `x={{ expandenv "$CCM_SANDBOX_CANARY" }}`, `{{ env "CCM_SANDBOX_CANARY" }}`, `ip={{ getHostByName "localhost" }}`} {
			err := fails(scaffoldtype.EngineGo, map[string]string{"a.conf": body}, templates.ErrSandbox, "is not allowed in the template sandbox")
			Expect(err.Error()).NotTo(ContainSubstring("canary-scaffold-env-7c1e"))
			Expect(err.Error()).NotTo(ContainSubstring(os.Getenv("HOME") + "\n"))
			Expect(os.RemoveAll(source)).To(Succeed())
		}
	})

	It("ends a Go partial that renders itself at the depth limit (finding 1)", func() {
		fails(scaffoldtype.EngineGo, map[string]string{"_partials/loop.txt": `{{ render "_partials/loop.txt" . }}`, "a.conf": `{{ render "_partials/loop.txt" . }}`}, templates.ErrLimit, "depth limit")
	})

	It("ends a Go file that renders itself at the depth limit (finding 1)", func() {
		fails(scaffoldtype.EngineGo, map[string]string{"self.txt": `x{{ render "self.txt" . }}`}, templates.ErrLimit, "depth limit")
	})

	It("refuses Go templates that call themselves", func() {
		fails(scaffoldtype.EngineGo, map[string]string{"a.conf": `{{ define "r" }}{{ template "r" . }}{{ end }}{{ template "r" . }}`}, templates.ErrSandbox, "calls itself")
	})

	It("ends a Jet file that renders itself at the depth limit, and refuses recursive blocks and include (finding 1)", func() {
		fails(scaffoldtype.EngineJet, map[string]string{"self.txt": `x[[ render("self.txt", .) ]]`}, templates.ErrLimit, "depth limit")
		Expect(os.RemoveAll(source)).To(Succeed())
		fails(scaffoldtype.EngineJet, map[string]string{"a.txt": `[[ block r() ]][[ yield r() ]][[ end ]]`}, templates.ErrSandbox, "block r calls itself")
		Expect(os.RemoveAll(source)).To(Succeed())
		fails(scaffoldtype.EngineJet, map[string]string{"a.txt": `[[ include "a.txt" ]]`}, templates.ErrSandbox, "include is not allowed")
		Expect(os.RemoveAll(source)).To(Succeed())
		fails(scaffoldtype.EngineJet, map[string]string{"a.txt": `[[ exec("a.txt") ]]`}, templates.ErrSandbox, "exec() is not allowed")
	})

	It("bounds repeat, until and ints in scaffolds (finding 6)", func() {
		fails(scaffoldtype.EngineGo, map[string]string{"a.txt": `{{ repeat 1000000000000 "x" }}`}, templates.ErrLimit, "values limit")
		Expect(os.RemoveAll(source)).To(Succeed())
		fails(scaffoldtype.EngineGo, map[string]string{"a.txt": `{{ range until 2000 }}{{ range until 2000 }}{{ end }}{{ end }}`}, templates.ErrLimit, "steps limit")
		Expect(os.RemoveAll(source)).To(Succeed())
		fails(scaffoldtype.EngineJet, map[string]string{"a.txt": `[[ range i := ints(0, 1000000000000) ]]x[[ end ]]`}, templates.ErrLimit, "steps limit")
		Expect(os.RemoveAll(source)).To(Succeed())
		fails(scaffoldtype.EngineGo, map[string]string{"a.txt": `{{ range until 3000 }}{{ write "big.txt" (repeat 4000 "x") }}{{ end }}`}, templates.ErrLimit, "output limit")
	})
})
