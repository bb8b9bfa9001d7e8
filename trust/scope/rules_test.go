package scope_test

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/trust/scope"
)

var _ = Describe("Compile", func() {
	all := []string{"archive", "exec", "file", "package", "scaffold", "service"}

	It("compiles nothing to a nil scope that allows everything", func() {
		s, err := scope.Compile(&scope.Rules{}, nil, all)
		Expect(err).ToNot(HaveOccurred())
		Expect(s).To(BeNil())
		Expect(s.Hosts(map[string]any{"role": "db"})).To(BeNil())
	})

	It("compiles a realistic split", func() {
		_, err := scope.Compile(&scope.Rules{
			Hosts:   []string{"role=web"},
			Exec:    &scope.Exec{Commands: []string{"/usr/sbin/nginx -s reload", "/usr/bin/systemctl restart *", "/usr/bin/journalctl -u nginx **"}, Environment: []string{"LANG=*"}},
			File:    &scope.Files{Paths: []string{"/etc/nginx/", "/srv/www"}},
			Service: &scope.Names{Names: []string{"nginx*"}},
			Package: &scope.Names{Names: []string{"nginx", "nginx-*"}},
		}, &scope.Rules{
			Hosts:   []string{"env=prod"},
			Exec:    &scope.Exec{Commands: []string{"/usr/bin/systemctl restart sshd"}},
			File:    &scope.Files{Paths: []string{"/etc/nginx/ssl"}},
			Package: &scope.Names{Names: []string{"nginx-dbg"}},
		}, all)
		Expect(err).ToNot(HaveOccurred())
	})

	DescribeTable("refuses a rule that cannot parse or never decides, naming it",
		func(allow, deny *scope.Rules, types []string, want string) {
			_, err := scope.Compile(allow, deny, types)
			Expect(err).To(MatchError(scope.ErrRule))
			Expect(err).To(MatchError(ContainSubstring(want)))
		},
		Entry("hosts filter that does not parse", &scope.Rules{Hosts: []string{"role"}}, nil, all, "hosts:"),
		Entry("empty hosts", &scope.Rules{Hosts: []string{}}, nil, all, "hosts: empty"),
		Entry("relative executable", &scope.Rules{Exec: &scope.Exec{Commands: []string{"nginx -s reload"}}}, nil, all, `exec.commands[0] "nginx -s reload": the executable must be an absolute path`),
		Entry("wildcard executable", &scope.Rules{Exec: &scope.Exec{Commands: []string{"* **"}}}, nil, all, "the executable must be written out"),
		Entry("** not last", &scope.Rules{Exec: &scope.Exec{Commands: []string{"/bin/ls ** -l"}}}, nil, all, `"**" stands for the remaining arguments`),
		Entry("bad quoting", &scope.Rules{Exec: &scope.Exec{Commands: []string{"/bin/echo 'oops"}}}, nil, all, "exec.commands[0]"),
		Entry("environment without commands", &scope.Rules{Exec: &scope.Exec{Environment: []string{"A=1"}}}, nil, all, "list the commands too"),
		Entry("environment not KEY=VALUE", &scope.Rules{Exec: &scope.Exec{Commands: []string{"/bin/true"}, Environment: []string{"LANG"}}}, nil, all, "exec.environment[0]"),
		Entry("relative cwd", &scope.Rules{Exec: &scope.Exec{Commands: []string{"/bin/true"}, Cwd: []string{"srv"}}}, nil, all, `exec.cwd[0] "srv": not an absolute path`),
		Entry("relative directory in path", &scope.Rules{Exec: &scope.Exec{Commands: []string{"/bin/true"}, Path: []string{"/usr/bin:bin"}}}, nil, all, "exec.path[0]"),
		Entry("relative file path", &scope.Rules{File: &scope.Files{Paths: []string{"etc/nginx"}}}, nil, all, `file.paths[0] "etc/nginx": not an absolute path`),
		Entry("glob in a file path", &scope.Rules{File: &scope.Files{Paths: []string{"/etc/*/conf"}}}, nil, all, "prefixes, not globs"),
		Entry("empty file scope", &scope.Rules{File: &scope.Files{}}, nil, all, "file: empty"),
		Entry("name with a space", &scope.Rules{Package: &scope.Names{Names: []string{"a b"}}}, nil, all, "package.names[0]"),
		Entry("duplicate path (after cleaning)", &scope.Rules{File: &scope.Files{Paths: []string{"/etc/nginx/", "/etc/nginx"}}}, nil, all, `file.paths[1] "/etc/nginx": the same as file.paths[0]`),
		Entry("duplicate command", &scope.Rules{Exec: &scope.Exec{Commands: []string{"/bin/ls -l", "/bin/ls  '-l'"}}}, nil, all, "exec.commands[1]"),
		Entry("too many entries", &scope.Rules{Package: &scope.Names{Names: strings.Split(strings.Repeat("x,", scope.MaxEntries+1), ",")}}, nil, all, "at most 1000"),
		Entry("exec scope without exec", &scope.Rules{Exec: &scope.Exec{Commands: []string{"/bin/true"}}}, nil, []string{"file"}, "exec: the signer is not allowed exec, so the rule can never apply"),
		Entry("file scope without file, archive, scaffold or exec", &scope.Rules{File: &scope.Files{Paths: []string{"/etc"}}}, nil, []string{"package"}, "not allowed file or archive or scaffold or exec"),
		Entry("empty read_paths", &scope.Rules{File: &scope.Files{Paths: []string{"/srv"}, ReadPaths: []string{}}}, nil, all, "file.read_paths: empty"),
		Entry("relative read path", &scope.Rules{File: &scope.Files{ReadPaths: []string{"etc"}}}, nil, all, `file.read_paths[0] "etc": not an absolute path`),
		Entry("read path shadowed by a deny of its parent", &scope.Rules{File: &scope.Files{ReadPaths: []string{"/etc/ssl/"}}}, &scope.Rules{File: &scope.Files{ReadPaths: []string{"/etc"}}}, all,
			`file.read_paths[0] "/etc/ssl/": everything it allows is denied by deny.file.read_paths[0] "/etc"`),
		Entry("package scope without package", &scope.Rules{Package: &scope.Names{Names: []string{"nginx"}}}, nil, []string{"service"}, "package: the signer is not allowed package"),
		Entry("deny service without service", nil, &scope.Rules{Service: &scope.Names{Names: []string{"sshd"}}}, []string{"package"}, "deny.service: the signer is not allowed service"),
		Entry("path shadowed by a deny of its parent", &scope.Rules{File: &scope.Files{Paths: []string{"/etc/nginx/"}}}, &scope.Rules{File: &scope.Files{Paths: []string{"/etc"}}}, all,
			`file.paths[0] "/etc/nginx/": everything it allows is denied by deny.file.paths[0] "/etc"`),
		Entry("path shadowed by the same deny", &scope.Rules{File: &scope.Files{Paths: []string{"/srv/www"}}}, &scope.Rules{File: &scope.Files{Paths: []string{"/srv/www/"}}}, all, "deny.file.paths[0]"),
		Entry("command shadowed by a wider deny", &scope.Rules{Exec: &scope.Exec{Commands: []string{"/usr/bin/systemctl restart nginx"}}}, &scope.Rules{Exec: &scope.Exec{Commands: []string{"/usr/bin/systemctl **"}}}, all,
			`exec.commands[0] "/usr/bin/systemctl restart nginx": every command it allows is denied by deny.exec.commands[0] "/usr/bin/systemctl **"`),
		Entry("command with * shadowed by deny *", &scope.Rules{Exec: &scope.Exec{Commands: []string{"/usr/bin/systemctl restart *"}}}, &scope.Rules{Exec: &scope.Exec{Commands: []string{"/usr/bin/systemctl * *"}}}, all, "every command it allows"),
		Entry("glob shadowed by a wider glob", &scope.Rules{Package: &scope.Names{Names: []string{"nginx-*"}}}, &scope.Rules{Package: &scope.Names{Names: []string{"nginx*"}}}, all, `package.names[0] "nginx-*": everything it allows is denied by deny.package.names[0] "nginx*"`),
		Entry("name denied by *", &scope.Rules{Service: &scope.Names{Names: []string{"nginx"}}}, &scope.Rules{Service: &scope.Names{Names: []string{"*"}}}, all, "deny.service.names[0]"),
		Entry("environment shadowed", &scope.Rules{Exec: &scope.Exec{Commands: []string{"/bin/true"}, Environment: []string{"LANG=C"}}}, &scope.Rules{Exec: &scope.Exec{Environment: []string{"LANG=*"}}}, all, "deny.exec.environment[0]"),
		Entry("a URL prefix with user information", &scope.Rules{Net: &scope.Net{URLs: []string{"https://u:p@repo.example.com/"}}}, nil, all, `net.urls[0] "https://u:p@repo.example.com/": user information`),
		Entry("a URL prefix of another scheme", &scope.Rules{Net: &scope.Net{URLs: []string{"ftp://repo.example.com/"}}}, nil, all, "only http and https"),
		Entry("empty net scope", &scope.Rules{Net: &scope.Net{}}, nil, all, "net: empty"),
		Entry("the same URL prefix twice (ports normalised)", &scope.Rules{Net: &scope.Net{URLs: []string{"https://repo.example.com/r", "https://REPO.example.com:443/r/"}}}, nil, all, `net.urls[1] "https://REPO.example.com:443/r/": the same as net.urls[0]`),
		Entry("a URL prefix shadowed by a deny of its parent", &scope.Rules{Net: &scope.Net{URLs: []string{"https://repo.example.com/r/"}}}, &scope.Rules{Net: &scope.Net{URLs: []string{"https://repo.example.com/"}}}, all,
			`net.urls[0] "https://repo.example.com/r/": everything it allows is denied by deny.net.urls[0] "https://repo.example.com/"`),
		Entry("hosts refused by a narrower deny", &scope.Rules{Hosts: []string{"role=web", "os=debian"}}, &scope.Rules{Hosts: []string{"role=web"}}, all, "every host it allows is refused by deny.hosts"),
	)

	It("compiles net for a signer allowed any type: goss http and addr rules of any resource fetch and dial", func() {
		_, err := scope.Compile(&scope.Rules{Net: &scope.Net{URLs: []string{"https://repo.example.com/"}}}, &scope.Rules{Net: &scope.Net{URLs: []string{"http://10.0.0.1/"}}}, []string{"file"})
		Expect(err).ToNot(HaveOccurred())
	})

	DescribeTable("keeps rules a deny only narrows",
		func(allow, deny *scope.Rules) {
			_, err := scope.Compile(allow, deny, all)
			Expect(err).ToNot(HaveOccurred())
		},
		Entry("deny below an allowed prefix", &scope.Rules{File: &scope.Files{Paths: []string{"/etc/nginx"}}}, &scope.Rules{File: &scope.Files{Paths: []string{"/etc/nginx/ssl"}}}),
		Entry("sibling prefix is not a parent", &scope.Rules{File: &scope.Files{Paths: []string{"/etc/nginx"}}}, &scope.Rules{File: &scope.Files{Paths: []string{"/etc/ngin"}}}),
		Entry("deny of one argument of a wildcard", &scope.Rules{Exec: &scope.Exec{Commands: []string{"/usr/bin/systemctl restart *"}}}, &scope.Rules{Exec: &scope.Exec{Commands: []string{"/usr/bin/systemctl restart sshd"}}}),
		Entry("deny ** of another executable", &scope.Rules{Exec: &scope.Exec{Commands: []string{"/usr/bin/systemctl restart *"}}}, &scope.Rules{Exec: &scope.Exec{Commands: []string{"/bin/sh **"}}}),
		Entry("narrower name glob denied", &scope.Rules{Package: &scope.Names{Names: []string{"nginx*"}}}, &scope.Rules{Package: &scope.Names{Names: []string{"nginx-*"}}}),
		Entry("a glob whose star a literal deny cannot take", &scope.Rules{Package: &scope.Names{Names: []string{"ng*"}}}, &scope.Rules{Package: &scope.Names{Names: []string{"ng*x"}}}),
		Entry("deny below an allowed URL prefix", &scope.Rules{Net: &scope.Net{URLs: []string{"https://repo.example.com/"}}}, &scope.Rules{Net: &scope.Net{URLs: []string{"https://repo.example.com/private/"}}}),
		Entry("deny hosts with a term more", &scope.Rules{Hosts: []string{"role=web"}}, &scope.Rules{Hosts: []string{"role=web", "env=prod"}}),
	)
})
