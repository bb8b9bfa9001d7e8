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
	"github.com/ccm-fleet/ccm/resources/servicetype"
	"github.com/ccm-fleet/ccm/trust/scope"
)

// verdict is the first refusal among ds, or the last decision when all
// allow.
func verdict(ds []scope.Decision) scope.Decision {
	Expect(ds).ToNot(BeEmpty())
	for _, d := range ds {
		if !d.Allowed {
			return d
		}
	}
	return ds[len(ds)-1]
}

func execProps(command string, edit ...func(*exectype.Properties)) resources.Properties {
	p := &exectype.Properties{Command: command}
	p.Name = command
	for _, e := range edit {
		e(p)
	}
	Expect(p.Validate()).To(Succeed())
	return p
}

var _ = Describe("Scope", func() {
	var (
		dir string
		r   scope.Resolver
	)
	BeforeEach(func() {
		dir = GinkgoT().TempDir()
		r = scope.Resolver{SearchPath: "/usr/local/bin:/usr/bin:/bin", Shell: "/bin/sh"}
	})

	Describe("commands", func() {
		var s *scope.Scope
		BeforeEach(func() {
			Expect(os.Symlink("/bin/sh", filepath.Join(dir, "touch"))).To(Succeed())
			Expect(os.WriteFile(filepath.Join(dir, "busybox"), []byte("#!/bin/sh\nexit 0\n"), 0o755)).To(Succeed())
			var err error
			s, err = scope.Compile(&scope.Rules{Exec: &scope.Exec{
				Commands: []string{
					"/usr/bin/touch /srv/ok",
					"/usr/bin/systemctl restart *",
					"/usr/bin/env **",
					"/usr/bin/bash **",
					"/usr/bin/python3 **",
					"/usr/bin/python3 -c print(1)",
					dir + "/busybox **",
					"/usr/bin/journalctl -u nginx **",
					"/bin/sh -c 'systemctl reload nginx'",
				},
				Environment: []string{"LANG=*"},
				Cwd:         []string{"/srv"},
				Path:        []string{"/usr/bin:/bin"},
			}}, &scope.Rules{Exec: &scope.Exec{Commands: []string{"/usr/bin/systemctl restart sshd"}}}, []string{"exec", "scaffold"})
			Expect(err).ToNot(HaveOccurred())
		})

		DescribeTable("judges each command as it will run",
			func(props func() resources.Properties, provider string, allowed bool, rule string) {
				d := verdict(s.Resource(r, props(), provider))
				Expect(d.Allowed).To(Equal(allowed), d.String())
				Expect(d.Rule + ": " + d.Reason).To(ContainSubstring(rule))
			},
			Entry("exact pattern", func() resources.Properties { return execProps("/usr/bin/touch /srv/ok") }, "posix", true, "exec.commands[0]"),
			Entry("found in PATH", func() resources.Properties { return execProps("touch /srv/ok") }, "", true, "exec.commands[0]"),
			Entry("looked up in exec's base PATH, not the agent's", func() resources.Properties {
				// The agent's own PATH (the resolver's) finds the
				// look-alike first; the exec provider never looks there.
				r.SearchPath = dir + ":/usr/bin:/bin"
				return execProps("touch /srv/ok")
			}, "", true, "exec.commands[0]"),
			Entry("looked up in the resource's path when it gives one", func() resources.Properties {
				return execProps("touch /srv/ok", func(p *exectype.Properties) { p.Path = dir })
			}, "", false, "default deny"),
			Entry("through a linked directory (/bin -> usr/bin)", func() resources.Properties { return execProps("/bin/touch /srv/ok") }, "", true, "exec.commands[0]"),
			Entry("other argument", func() resources.Properties { return execProps("/usr/bin/touch /etc/shadow") }, "", false, "default deny"),
			Entry("one-word wildcard", func() resources.Properties { return execProps("/usr/bin/systemctl restart nginx") }, "", true, "exec.commands[1]"),
			Entry("one-word wildcard, two words", func() resources.Properties { return execProps("/usr/bin/systemctl restart nginx sshd") }, "", false, "default deny"),
			Entry("deny beats allow", func() resources.Properties { return execProps("/usr/bin/systemctl restart sshd") }, "", false, "deny.exec.commands[0]"),
			Entry("** takes none", func() resources.Properties { return execProps("/usr/bin/journalctl -u nginx") }, "", true, "exec.commands[7]"),
			Entry("sh -c", func() resources.Properties { return execProps("/bin/sh -c 'touch /srv/ok'") }, "", false, "default deny"),
			Entry("/usr/bin/../bin/sh", func() resources.Properties { return execProps("/usr/bin/../bin/sh -c id") }, "", false, "default deny"),
			Entry("env running a command, matched by a wildcard", func() resources.Properties { return execProps("/usr/bin/env touch /srv/ok") }, "", false, "a shell, or a command that runs other commands"),
			Entry("bash -c, matched by a wildcard", func() resources.Properties { return execProps("bash -c 'touch /tmp/x'") }, "", false, "spells out every argument"),
			Entry("python3 -c, matched by a wildcard", func() resources.Properties { return execProps("python3 -c 'import os'") }, "", false, "an interpreter's own options"),
			Entry("python3 -c spelled out", func() resources.Properties { return execProps("/usr/bin/python3 -c print(1)") }, "", true, "exec.commands[5]"),
			Entry("python3 script by a wildcard", func() resources.Properties { return execProps("/usr/bin/python3 /srv/app.py -c x") }, "", true, "exec.commands[4]"),
			Entry("busybox sh", func() resources.Properties { return execProps(dir + "/busybox sh -c id") }, "", false, "spells out every argument"),
			Entry("a link named like an allowed command", func() resources.Properties { return execProps(dir + "/touch /srv/ok") }, "", false, "default deny"),
			Entry("the shell provider", func() resources.Properties { return execProps("/usr/bin/touch /srv/ok") }, "shell", false, "default deny"),
			Entry("the shell provider, its line spelled out", func() resources.Properties { return execProps("systemctl reload nginx") }, "shell", true, "exec.commands[8]"),
			Entry("the shell provider, another line", func() resources.Properties { return execProps("systemctl reload nginx; id") }, "shell", false, "default deny"),
			Entry("sh -c spelled out, through the posix provider", func() resources.Properties { return execProps("/usr/bin/sh -c 'systemctl reload nginx'") }, "", true, "exec.commands[8]"),
			Entry("a relative executable", func() resources.Properties { return execProps("./touch /srv/ok") }, "", false, "relative path"),
			Entry("a command not found", func() resources.Properties { return execProps("nosuchcommand-xyz") }, "", false, "not found"),
			Entry("onlyif is a command too", func() resources.Properties {
				return execProps("/usr/bin/touch /srv/ok", func(p *exectype.Properties) { p.OnlyIf = "/bin/sh -c true" })
			}, "", false, "default deny"),
			Entry("listed environment", func() resources.Properties {
				return execProps("/usr/bin/touch /srv/ok", func(p *exectype.Properties) { p.Environment = []string{"LANG=C.UTF-8"} })
			}, "", true, "exec.environment[0]"),
			Entry("unlisted environment", func() resources.Properties {
				return execProps("/usr/bin/touch /srv/ok", func(p *exectype.Properties) { p.Environment = []string{"LD_PRELOAD=/tmp/x.so"} })
			}, "", false, "exec.environment (no entry matches"),
			Entry("unlisted cwd", func() resources.Properties {
				return execProps("/usr/bin/touch /srv/ok", func(p *exectype.Properties) { p.Cwd = "/tmp" })
			}, "", false, "exec.cwd (no entry matches"),
			Entry("listed cwd", func() resources.Properties {
				return execProps("/usr/bin/touch /srv/ok", func(p *exectype.Properties) { p.Cwd = "/srv" })
			}, "", true, "exec.cwd[0]"),
			Entry("unlisted path, even one finding the same file", func() resources.Properties {
				return execProps("touch /srv/ok", func(p *exectype.Properties) { p.Path = "/bin" })
			}, "", false, "exec.path (no entry matches"),
			Entry("a path that finds a look-alike", func() resources.Properties {
				return execProps("touch /srv/ok", func(p *exectype.Properties) { p.Path = dir + ":/usr/bin" })
			}, "", false, "default deny"),
		)

		It("judges scaffold post commands as exec, the file a value only a wildcard takes", func() {
			p := &scaffoldtype.Properties{Source: "/srv/tmpl", Post: []map[string]string{{"*.go": "/usr/bin/touch"}}}
			p.Name = "/srv/out"
			Expect(p.Validate()).To(Succeed())
			d := verdict(s.Resource(r, p, ""))
			Expect(d.Allowed).To(BeFalse(), d.String())
			Expect(d.Check).To(Equal("post[0] *.go"))

			p.Post = []map[string]string{{"*.go": "/usr/bin/systemctl restart {}"}}
			Expect(verdict(s.Resource(r, p, "")).Allowed).To(BeTrue())
		})
	})

	Describe("paths", func() {
		var s *scope.Scope
		www := func() string { return filepath.Join(dir, "www") }
		BeforeEach(func() {
			for _, d := range []string{"www/site", "www/secret", "outside", "wwwx"} {
				Expect(os.MkdirAll(filepath.Join(dir, d), 0o755)).To(Succeed())
			}
			Expect(os.Symlink(filepath.Join(dir, "outside"), filepath.Join(dir, "www", "link"))).To(Succeed())
			Expect(os.Symlink("../outside", filepath.Join(dir, "www", "rel"))).To(Succeed())
			Expect(os.WriteFile(filepath.Join(dir, "outside", "shadow"), nil, 0o600)).To(Succeed())
			Expect(os.Symlink(filepath.Join(dir, "outside", "shadow"), filepath.Join(dir, "www", "shadow"))).To(Succeed())
			Expect(os.Symlink(filepath.Join(dir, "www"), filepath.Join(dir, "alias"))).To(Succeed())
			Expect(os.Symlink(filepath.Join(dir, "www", "loop2"), filepath.Join(dir, "www", "loop1"))).To(Succeed())
			Expect(os.Symlink(filepath.Join(dir, "www", "loop1"), filepath.Join(dir, "www", "loop2"))).To(Succeed())
			Expect(os.Symlink(filepath.Join(dir, "outside", "missing"), filepath.Join(dir, "www", "dangling"))).To(Succeed())
			var err error
			s, err = scope.Compile(&scope.Rules{File: &scope.Files{Paths: []string{www() + "/"}}},
				&scope.Rules{File: &scope.Files{Paths: []string{filepath.Join(dir, "www", "secret")}}}, []string{"file", "archive", "scaffold"})
			Expect(err).ToNot(HaveOccurred())
		})
		file := func(name string) resources.Properties {
			p := &filetype.Properties{Owner: "root", Group: "root", Mode: "0644"}
			p.Name = name
			p.Ensure = "present"
			return p
		}

		DescribeTable("judges where a path leads",
			func(props func() resources.Properties, allowed bool, rule string) {
				d := verdict(s.Resource(r, props(), ""))
				Expect(d.Allowed).To(Equal(allowed), d.String())
				Expect(d.Rule + ": " + d.Reason).To(ContainSubstring(rule))
			},
			Entry("inside", func() resources.Properties { return file(www() + "/site/index.html") }, true, "file.paths[0]"),
			Entry("the prefix itself", func() resources.Properties { return file(www()) }, true, "file.paths[0]"),
			Entry("not yet existing below", func() resources.Properties { return file(www() + "/new/a/b") }, true, "file.paths[0]"),
			Entry("outside", func() resources.Properties { return file(dir + "/outside/x") }, false, "default deny"),
			Entry("a sibling sharing the prefix's letters", func() resources.Properties { return file(dir + "/wwwx/x") }, false, "default deny"),
			Entry("deny beats allow", func() resources.Properties { return file(www() + "/secret/key") }, false, "deny.file.paths[0]"),
			Entry("through a linked directory", func() resources.Properties { return file(www() + "/link/x") }, false, "default deny"),
			Entry("through a relative link", func() resources.Properties { return file(www() + "/rel/x") }, false, "default deny"),
			Entry("a link itself pointing outside", func() resources.Properties { return file(www() + "/shadow") }, false, "default deny"),
			Entry("through a symbolic link loop", func() resources.Properties { return file(www() + "/loop1/x") }, false, "too many levels of symbolic links"),
			Entry("through a dangling link to a directory not made yet", func() resources.Properties { return file(www() + "/dangling/x") }, false, "default deny"),
			Entry("a dangling link itself", func() resources.Properties { return file(www() + "/dangling") }, false, "default deny"),
			Entry("through a link to the allowed directory", func() resources.Properties { return file(dir + "/alias/site/x") }, true, "file.paths[0]"),
			Entry("archive extract_parent outside", func() resources.Properties {
				p := &archivetype.Properties{URL: "https://example.com/a.tar.gz", ExtractParent: dir + "/outside", Creates: dir + "/outside/x", Owner: "root", Group: "root"}
				p.Name = www() + "/a.tar.gz"
				return p
			}, false, "default deny"),
			Entry("archive saved outside", func() resources.Properties {
				p := &archivetype.Properties{URL: "https://example.com/a.tar.gz", Owner: "root", Group: "root"}
				p.Name = dir + "/outside/a.tar.gz"
				return p
			}, false, "default deny"),
			Entry("scaffold target outside", func() resources.Properties {
				p := &scaffoldtype.Properties{Source: "/srv/tmpl"}
				p.Name = dir + "/outside"
				return p
			}, false, "default deny"),
			Entry("archive extracted above a denied directory", func() resources.Properties {
				p := &archivetype.Properties{URL: "https://example.com/a.tar.gz", ExtractParent: www(), Creates: www() + "/x", Owner: "root", Group: "root"}
				p.Name = www() + "/a.tar.gz"
				return p
			}, false, "deny.file.paths[0]"),
			Entry("scaffold rendered above a denied directory", func() resources.Properties {
				p := &scaffoldtype.Properties{Source: "/srv/tmpl"}
				p.Name = www()
				return p
			}, false, "where the resource may write anything"),
			Entry("scaffold target inside", func() resources.Properties {
				p := &scaffoldtype.Properties{Source: www() + "/site"}
				p.Name = www() + "/site"
				return p
			}, true, "file.paths[0]"),
		)
	})

	Describe("names", func() {
		It("allows globs, refuses what a deny names and what no glob matches", func() {
			s, err := scope.Compile(&scope.Rules{Package: &scope.Names{Names: []string{"nginx", "nginx-*"}}, Service: &scope.Names{Names: []string{"nginx*"}}},
				&scope.Rules{Package: &scope.Names{Names: []string{"nginx-dbg"}}}, []string{"package", "service"})
			Expect(err).ToNot(HaveOccurred())
			pkg := func(n string) resources.Properties { p := &pkgtype.Properties{}; p.Name = n; return p }
			svc := func(n string) resources.Properties { p := &servicetype.Properties{}; p.Name = n; return p }
			for name, want := range map[string]string{"nginx": "package.names[0]", "nginx-extras": "package.names[1]", "nginx-dbg": "deny.package.names[0]", "openssh-server": "default deny", "nginxx": "default deny"} {
				d := verdict(s.Resource(scope.Resolver{}, pkg(name), ""))
				Expect(d.Rule).To(ContainSubstring(want), name)
				Expect(d.Allowed).To(Equal(want[0] == 'p'), name)
			}
			Expect(verdict(s.Resource(scope.Resolver{}, svc("nginx-worker"), "")).Allowed).To(BeTrue())
			Expect(verdict(s.Resource(scope.Resolver{}, svc("sshd"), "")).Allowed).To(BeFalse())
		})
	})

	Describe("urls", func() {
		archive := func(url string) resources.Properties {
			p := &archivetype.Properties{URL: url, Owner: "root", Group: "root"}
			p.Name = "/srv/www/a.tar.gz"
			p.Ensure = archivetype.EnsurePresent
			return p
		}
		It("refuses loopback, link-local and metadata hosts without net.urls, even without any scope", func() {
			var none *scope.Scope
			d := verdict(none.Resource(scope.Resolver{}, archive("http://127.0.0.1:8080/x.tar.gz"), ""))
			Expect(d.String()).To(Equal(`denied url "http://127.0.0.1:8080/x.tar.gz" by net.urls (not set): 127.0.0.1 is a loopback address: only a net.urls prefix naming it allows it`))
			Expect(verdict(none.Resource(scope.Resolver{}, archive("http://169.254.169.254/x.tar.gz"), "")).Reason).To(ContainSubstring("cloud metadata"))
			Expect(verdict(none.Resource(scope.Resolver{}, archive("https://repo.example.com/x.tar.gz"), "")).Allowed).To(BeTrue())
			files, err := scope.Compile(&scope.Rules{File: &scope.Files{Paths: []string{"/srv/www"}}}, nil, []string{"archive"})
			Expect(err).ToNot(HaveOccurred())
			Expect(verdict(files.Resource(scope.Resolver{}, archive("http://[::1]/x.tar.gz"), "")).Rule).To(Equal("net.urls (not set)"))
		})
		It("allows only what a net.urls prefix holds, and nothing a deny prefix holds", func() {
			s, err := scope.Compile(&scope.Rules{Net: &scope.Net{URLs: []string{"https://repo.example.com/releases/", "http://127.0.0.1:8080/releases/"}}},
				&scope.Rules{Net: &scope.Net{URLs: []string{"https://repo.example.com/releases/old/"}}}, []string{"archive"})
			Expect(err).ToNot(HaveOccurred())
			for url, want := range map[string]string{
				"https://repo.example.com/releases/a.tar.gz":      `net.urls[0] "https://repo.example.com/releases/"`,
				"http://127.0.0.1:8080/releases/a.tar.gz":         `net.urls[1] "http://127.0.0.1:8080/releases/"`,
				"https://repo.example.com/releases-evil/a.tar.gz": "default deny",
				"https://repo.example.com.evil/releases/a.tar.gz": "default deny",
				"https://repo.example.com/releases/old/a.tar.gz":  `deny.net.urls[0] "https://repo.example.com/releases/old/"`,
				"http://127.0.0.1:9/releases/a.tar.gz":            "default deny",
			} {
				d := verdict(s.Resource(scope.Resolver{}, archive(url), ""))
				Expect(d.Rule).To(ContainSubstring(want), url)
				Expect(d.Allowed).To(Equal(want[0] == 'n'), url)
				Expect(d.Check).To(Equal("url"))
			}
		})
	})

	Describe("hosts", func() {
		It("allows hosts whose facts match, refuses others and those deny.hosts matches", func() {
			s, err := scope.Compile(&scope.Rules{Hosts: []string{"role=web"}}, &scope.Rules{Hosts: []string{"env=prod"}}, []string{"file"})
			Expect(err).ToNot(HaveOccurred())
			Expect(s.Hosts(map[string]any{"identity": "web1", "role": "web", "env": "dev"}).Allowed).To(BeTrue())
			d := s.Hosts(map[string]any{"identity": "db1", "role": "db"})
			Expect(d.Allowed).To(BeFalse())
			Expect(d.String()).To(Equal(`denied host "db1" by hosts ["role=web"]: this host's facts do not match it`))
			d = s.Hosts(map[string]any{"identity": "web9", "role": "web", "env": "prod"})
			Expect(d.Allowed).To(BeFalse())
			Expect(d.Rule).To(Equal(`deny.hosts ["env=prod"]`))
		})
	})
})
