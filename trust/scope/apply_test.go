package scope_test

import (
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/applytype"
	"github.com/ccm-fleet/ccm/trust/scope"
)

var _ = Describe("Scope of an apply resource", func() {
	var (
		dir, www, outside string
		s                 *scope.Scope
		r                 scope.Resolver
	)
	BeforeEach(func() {
		dir = GinkgoT().TempDir()
		www, outside = filepath.Join(dir, "www"), filepath.Join(dir, "outside")
		for _, d := range []string{www + "/app", outside} {
			Expect(os.MkdirAll(d, 0o755)).To(Succeed())
		}
		for _, f := range []string{www + "/app/manifest.yaml", outside + "/manifest.yaml"} {
			Expect(os.WriteFile(f, []byte("ccm: {}\n"), 0o600)).To(Succeed())
		}
		var err error
		s, err = scope.Compile(&scope.Rules{File: &scope.Files{Paths: []string{www + "/"}}}, nil, []string{"apply", "file"})
		Expect(err).ToNot(HaveOccurred())
		r = scope.Resolver{SearchPath: "/usr/bin:/bin", Shell: "/bin/sh", WorkingDir: www}
	})
	apply := func(name string) resources.Properties {
		p := &applytype.Properties{}
		p.Name = name
		Expect(p.Validate()).To(Succeed())
		return p
	}

	It("judges the child manifest as a path read, relative to the parent's directory", func() {
		d := readDecision(s.Resource(r, apply("app/manifest.yaml"), ""), "name")
		Expect(d.Allowed).To(BeTrue(), d.String())
		Expect(d.Value).To(ContainSubstring(www + "/app/manifest.yaml"))
	})

	It("refuses a child manifest outside the read scope, relative or absolute", func() {
		d := readDecision(s.Resource(r, apply("../outside/manifest.yaml"), ""), "name")
		Expect(d.Allowed).To(BeFalse(), d.String())
		d = readDecision(s.Resource(r, apply(outside+"/manifest.yaml"), ""), "name")
		Expect(d.Allowed).To(BeFalse(), d.String())
	})
})
