package scope_test

import (
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/archivetype"
	"github.com/ccm-fleet/ccm/resources/exectype"
	"github.com/ccm-fleet/ccm/resources/filetype"
	"github.com/ccm-fleet/ccm/resources/pkgtype"
	"github.com/ccm-fleet/ccm/resources/scaffoldtype"
	"github.com/ccm-fleet/ccm/trust/scope"
)

// readDecision is the decision about check (as read) among ds; it fails
// when there is none.
func readDecision(ds []scope.Decision, check string) scope.Decision {
	for _, d := range ds {
		if d.Check == check+" (read)" {
			return d
		}
	}
	Fail("no read decision for " + check)
	return scope.Decision{}
}

var _ = Describe("Scope reads", func() {
	var (
		dir, www, ro, outside, work string
		r                           scope.Resolver
	)
	BeforeEach(func() {
		dir = GinkgoT().TempDir()
		www, ro, outside, work = filepath.Join(dir, "www"), filepath.Join(dir, "ro"), filepath.Join(dir, "outside"), filepath.Join(dir, "work")
		for _, d := range []string{www + "/tmpl", www + "/badtmpl/_partials", ro, outside + "/tree", work} {
			Expect(os.MkdirAll(d, 0o755)).To(Succeed())
		}
		for _, f := range []string{outside + "/secret", ro + "/shadow", ro + "/conf", www + "/page", work + "/a.conf", www + "/tmpl/x.conf"} {
			Expect(os.WriteFile(f, []byte("x"), 0o600)).To(Succeed())
		}
		Expect(os.Symlink(outside+"/secret", www+"/link")).To(Succeed())
		Expect(os.Symlink("../outside", www+"/up")).To(Succeed())
		Expect(os.Symlink(outside+"/secret", www+"/badtmpl/_partials/p")).To(Succeed())
		Expect(os.Symlink(outside, work+"/out")).To(Succeed())
		r = scope.Resolver{SearchPath: "/usr/bin:/bin", Shell: "/bin/sh"}
	})

	file := func(name, source string) resources.Properties {
		p := &filetype.Properties{Source: source, Owner: "root", Group: "root", Mode: "0644"}
		p.Name = name
		Expect(p.Validate()).To(Succeed())
		return p
	}
	content := func(name string) resources.Properties {
		c := "hello"
		p := &filetype.Properties{Content: &c, Owner: "root", Group: "root", Mode: "0644"}
		p.Name = name
		Expect(p.Validate()).To(Succeed())
		return p
	}
	scaffold := func(target, source string) resources.Properties {
		p := &scaffoldtype.Properties{Source: source}
		p.Name = target
		Expect(p.Validate()).To(Succeed())
		return p
	}
	archive := func(creates string) resources.Properties {
		p := &archivetype.Properties{URL: "https://example.com/a.tar.gz", ExtractParent: www, Creates: creates, Owner: "root", Group: "root"}
		p.Name = www + "/a.tar.gz"
		Expect(p.Validate()).To(Succeed())
		return p
	}

	type readCase struct {
		props   func() resources.Properties
		check   string
		allowed bool
		rule    string
	}
	judge := func(s *scope.Scope, c readCase) {
		d := readDecision(s.Resource(r, c.props(), ""), c.check)
		Expect(d.Allowed).To(Equal(c.allowed), d.String())
		Expect(d.Rule + ": " + d.Reason).To(ContainSubstring(c.rule))
	}

	Describe("a signer with file.paths only (reads fall back to them)", func() {
		var s *scope.Scope
		BeforeEach(func() {
			var err error
			s, err = scope.Compile(&scope.Rules{File: &scope.Files{Paths: []string{www + "/"}}}, &scope.Rules{File: &scope.Files{Paths: []string{www + "/badtmpl"}}}, []string{"file", "archive", "scaffold"})
			Expect(err).ToNot(HaveOccurred())
		})
		DescribeTable("judges each path read where it leads",
			func(c readCase) { judge(s, c) },
			Entry("file source inside", readCase{func() resources.Properties { return file(www+"/f", www+"/page") }, "source", true, "file.paths[0]"}),
			Entry("file source outside", readCase{func() resources.Properties { return file(www+"/f", outside+"/secret") }, "source", false, "file.paths (no prefix holds"}),
			Entry("file source through a link inside leading outside", readCase{func() resources.Properties { return file(www+"/f", www+"/link") }, "source", false, "default deny"}),
			Entry("file source through a relative link and ..", readCase{func() resources.Properties { return file(www+"/f", www+"/up/secret") }, "source", false, "default deny"}),
			Entry("file source in a denied directory", readCase{func() resources.Properties { return file(www+"/f", www+"/badtmpl/_partials/p") }, "source", false, "deny.file.paths[0]"}),
			Entry("file content: the current content of the name is read", readCase{func() resources.Properties { return content(www + "/page") }, "name", true, "file.paths[0]"}),
			Entry("scaffold source inside", readCase{func() resources.Properties { return scaffold(www+"/site", www+"/tmpl") }, "source", true, "file.paths[0]"}),
			Entry("scaffold source outside", readCase{func() resources.Properties { return scaffold(www+"/site", outside+"/tree") }, "source", false, "default deny"}),
			Entry("scaffold source as a file:// URL outside", readCase{func() resources.Properties { return scaffold(www+"/site", "file://"+outside+"/tree") }, "source", false, "default deny"}),
			Entry("scaffold source holding a link that leads outside", readCase{func() resources.Properties { return scaffold(www+"/site", www) }, "source", false, "deny.file.paths[0]"}),
			Entry("scaffold target is read too", readCase{func() resources.Properties { return scaffold(www+"/site", www+"/tmpl") }, "target", true, "file.paths[0]"}),
			Entry("archive creates outside", readCase{func() resources.Properties { return archive(outside + "/secret") }, "creates", false, "default deny"}),
			Entry("archive creates inside", readCase{func() resources.Properties { return archive(www + "/x") }, "creates", true, "file.paths[0]"}),
		)

		It("judges a link below a scaffold source by where it leads", func() {
			s2, err := scope.Compile(&scope.Rules{File: &scope.Files{Paths: []string{www + "/"}}}, nil, []string{"scaffold"})
			Expect(err).ToNot(HaveOccurred())
			d := readDecision(s2.Resource(r, scaffold(www+"/site", www+"/badtmpl"), ""), "source")
			Expect(d.Allowed).To(BeFalse())
			Expect(d.Reason).To(ContainSubstring("the link " + www + "/badtmpl/_partials/p below it leads to " + outside + "/secret"))
		})

		It("lets a relative source read the request's own files, and only those", func() {
			r.WorkingDir = work
			d := readDecision(s.Resource(r, file(www+"/f", "a.conf"), ""), "source")
			Expect(d.Allowed).To(BeTrue(), d.String())
			Expect(d.Rule).To(ContainSubstring("the request's own files"))

			d = readDecision(s.Resource(r, file(www+"/f", "../outside/secret"), ""), "source")
			Expect(d.Allowed).To(BeFalse(), d.String())
			d = readDecision(s.Resource(r, file(www+"/f", "out/secret"), ""), "source")
			Expect(d.Allowed).To(BeFalse(), d.String())
			Expect(d.Value).To(ContainSubstring("leads to " + outside + "/secret"))
		})

		It("refuses a relative source with no working directory", func() {
			d := readDecision(s.Resource(r, &filetype.Properties{Source: "a.conf", CommonProperties: resources.CommonProperties{Name: www + "/f", Ensure: "present"}}, ""), "source")
			Expect(d.Allowed).To(BeFalse())
			Expect(d.Reason).To(ContainSubstring("not an absolute path"))
		})
	})

	Describe("a signer with read_paths", func() {
		var s *scope.Scope
		BeforeEach(func() {
			var err error
			s, err = scope.Compile(
				&scope.Rules{File: &scope.Files{Paths: []string{www + "/"}, ReadPaths: []string{ro, www}}},
				&scope.Rules{File: &scope.Files{ReadPaths: []string{ro + "/shadow"}}},
				[]string{"file", "exec"})
			Expect(err).ToNot(HaveOccurred())
		})
		DescribeTable("judges reads by read_paths, writes by paths",
			func(c readCase) { judge(s, c) },
			Entry("source in read_paths", readCase{func() resources.Properties { return file(www+"/f", ro+"/conf") }, "source", true, "file.read_paths[0]"}),
			Entry("source denied by deny.file.read_paths", readCase{func() resources.Properties { return file(www+"/f", ro+"/shadow") }, "source", false, "deny.file.read_paths[0]"}),
			Entry("source outside", readCase{func() resources.Properties { return file(www+"/f", outside+"/secret") }, "source", false, "file.read_paths (no prefix holds"}),
			Entry("exec creates outside", readCase{func() resources.Properties {
				return execProps("/bin/true", func(p *exectype.Properties) { p.Creates = outside + "/secret" })
			}, "creates", false, "file.read_paths (no prefix holds"}),
			Entry("exec creates inside", readCase{func() resources.Properties {
				return execProps("/bin/true", func(p *exectype.Properties) { p.Creates = ro + "/conf" })
			}, "creates", true, "file.read_paths[0]"}),
		)
		It("still judges the write by file.paths", func() {
			ds := s.Resource(r, file(ro+"/conf", www+"/page"), "")
			Expect(verdict(ds).Allowed).To(BeFalse())
			Expect(verdict(ds).Check).To(Equal("name"))
		})
	})

	Describe("a noop_only signer", func() {
		It("reads nothing when its scope lists no paths", func() {
			s, err := scope.Compile(nil, nil, []string{"file", "package", "service"}, scope.NoopOnly())
			Expect(err).ToNot(HaveOccurred())
			for _, c := range []readCase{
				{func() resources.Properties { return file(www+"/f", outside+"/secret") }, "source", false, "file.read_paths (noop_only signer: reads must be listed)"},
				{func() resources.Properties { return content(ro + "/shadow") }, "name", false, "file.read_paths (noop_only signer: reads must be listed)"},
			} {
				judge(s, c)
			}
			p := &pkgtype.Properties{}
			p.Name, p.Ensure = "nginx", "present"
			Expect(s.Resource(r, p, "")).To(BeEmpty())
		})
		It("reads what read_paths list, less the denied", func() {
			s, err := scope.Compile(&scope.Rules{File: &scope.Files{ReadPaths: []string{ro}}}, &scope.Rules{File: &scope.Files{ReadPaths: []string{ro + "/shadow"}}}, []string{"file"}, scope.NoopOnly())
			Expect(err).ToNot(HaveOccurred())
			judge(s, readCase{func() resources.Properties { return content(ro + "/conf") }, "name", true, "file.read_paths[0]"})
			judge(s, readCase{func() resources.Properties { return file(ro+"/conf", ro+"/shadow") }, "source", false, "deny.file.read_paths[0]"})
		})
	})

	It("leaves reads alone for a signer with no file scope that is not noop_only", func() {
		s, err := scope.Compile(&scope.Rules{Package: &scope.Names{Names: []string{"nginx"}}}, nil, []string{"file", "package"})
		Expect(err).ToNot(HaveOccurred())
		Expect(s.Resource(r, file(www+"/f", outside+"/secret"), "")).To(BeEmpty())
	})

	It("judges health checks of any resource as commands", func() {
		s, err := scope.Compile(&scope.Rules{Exec: &scope.Exec{Commands: []string{"/usr/bin/true"}}}, nil, []string{"file", "exec"})
		Expect(err).ToNot(HaveOccurred())
		p := file(www+"/f", www+"/page").(*filetype.Properties)
		p.HealthChecks = []resources.HealthCheck{{Command: "/bin/sh -c id"}}
		d := verdict(s.Resource(r, p, ""))
		Expect(d.Allowed).To(BeFalse())
		Expect(d.Check).To(Equal("health_checks[0]"))
	})
})
