package providers_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/providers"
	"github.com/ccm-fleet/ccm/providers/runner"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/engine"
	"github.com/ccm-fleet/ccm/resources/templates"
)

// injectionCorpus are values an attacker would put where a name or a
// version goes: option look-alikes, shell metacharacters, control bytes,
// overlong strings and Unicode look-alikes of harmless names. None of them
// is a valid package or service name or package version.
var injectionCorpus = map[string]string{
	"leading hyphen":              "-rf",
	"long option":                 "--force-yes",
	"option with value":           "-oDpkg::Options::=--force-confnew",
	"semicolon":                   "nginx;reboot",
	"pipe":                        "nginx|sh",
	"ampersand":                   "nginx&id",
	"dollar":                      "nginx$HOME",
	"command substitution":        "$(id)",
	"backticks":                   "`id`",
	"parentheses":                 "nginx(1)",
	"redirect out":                "nginx>/etc/passwd",
	"redirect in":                 "nginx</etc/shadow",
	"space":                       "nginx reboot",
	"tab":                         "nginx\treboot",
	"NUL":                         "nginx\x00",
	"newline":                     "nginx\nreboot",
	"carriage return":             "nginx\r",
	"quote":                       "nginx'",
	"double quote":                `nginx"`,
	"glob":                        "nginx*",
	"path":                        "../../bin/sh",
	"257 characters":              strings.Repeat("a", 257),
	"4096 characters":             strings.Repeat("n", 4096),
	"U+2010 hyphen":               "nginx\u2010light",
	"U+0456 Cyrillic i":           "ng\u0456nx",
	"fullwidth letters":           "\uff4e\uff47\uff49\uff4e\uff58",
	"zero-width space":            "ngi\u200bnx",
	"right-to-left override":      "nginx\u202e",
	"non-breaking space":          "nginx\u00a0",
	"leading hyphen after spaces": " -rf",
}

var _ = Describe("Injection corpus", func() {
	var (
		fake *runner.Fake
		eng  *engine.Engine
		env  *templates.Env
	)
	BeforeEach(func() {
		fake = &runner.Fake{} // no expectations: any command fails the spec
		reg, err := providers.Builtin(providers.Options{Runner: fake})
		Expect(err).NotTo(HaveOccurred())
		eng = engine.New(reg)
		env = templates.New(map[string]any{"os": "debian", "platform": "debian", "identity": "web1"}, nil)
	})

	// refuse applies a spec and expects a validation error and no command.
	refuse := func(typ string, props map[string]any) {
		GinkgoHelper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		ev, err := eng.Ensure(ctx, engine.RunOptions{Env: env}, engine.Spec{Type: typ, Properties: props})
		Expect(err).To(MatchError(resources.ErrInvalid), "%s %#v was accepted: %+v", typ, props, ev)
		Expect(fake.Calls()).To(BeEmpty(), "a command ran for %s %#v", typ, props)
	}

	fields := []struct {
		name  string
		typ   string
		props func(v string) map[string]any
	}{
		{"package name", "package", func(v string) map[string]any { return map[string]any{"name": v} }},
		{"package name (absent)", "package", func(v string) map[string]any { return map[string]any{"name": v, "ensure": "absent"} }},
		{"package version", "package", func(v string) map[string]any { return map[string]any{"name": "nginx", "ensure": v} }},
		{"service name", "service", func(v string) map[string]any { return map[string]any{"name": v} }},
		{"service name (stopped)", "service", func(v string) map[string]any { return map[string]any{"name": v, "ensure": "stopped", "enable": false} }},
	}
	for _, f := range fields {
		for label, value := range injectionCorpus {
			It(fmt.Sprintf("refuses %s %s before any command runs", f.name, label), func() {
				refuse(f.typ, f.props(value))
			})
		}
	}

	// Exec commands are split into words and run without a shell by the
	// posix provider, so metacharacters are data there; what no provider
	// can pass to a process safely is refused.
	DescribeTable("refuses exec properties no process can be given safely",
		func(props map[string]any) { refuse("exec", props) },
		Entry("NUL in the command", map[string]any{"name": "/bin/true\x00; reboot"}),
		Entry("NUL in onlyif", map[string]any{"name": "/bin/true", "onlyif": "/bin/true\x00x"}),
		Entry("NUL in unless", map[string]any{"name": "/bin/true", "unless": "/bin/false\x00x"}),
		Entry("unbalanced quote", map[string]any{"name": "/bin/echo 'oops"}),
		Entry("only blanks", map[string]any{"name": " \t "}),
		Entry("NUL in cwd", map[string]any{"name": "/bin/true", "cwd": "/tmp\x00/etc"}),
		Entry("relative cwd", map[string]any{"name": "/bin/true", "cwd": "tmp"}),
		Entry("NUL in creates", map[string]any{"name": "/bin/true", "creates": "/tmp/x\x00y"}),
		Entry("NUL in path", map[string]any{"name": "true", "path": "/bin:/usr/bin\x00:/tmp"}),
		Entry("relative path entry", map[string]any{"name": "true", "path": "/bin:."}),
		Entry("NUL in environment", map[string]any{"name": "/bin/true", "environment": []any{"A=b\x00c"}}),
		Entry("environment key with a space", map[string]any{"name": "/bin/true", "environment": []any{"A B=c"}}),
		Entry("environment key with a semicolon", map[string]any{"name": "/bin/true", "environment": []any{"A;reboot=c"}}),
		Entry("environment key starting with a digit", map[string]any{"name": "/bin/true", "environment": []any{"1A=c"}}),
		Entry("environment key with a look-alike", map[string]any{"name": "/bin/true", "environment": []any{"P\u0410TH=/tmp"}}),
		Entry("environment key with a newline", map[string]any{"name": "/bin/true", "environment": []any{"A\nB=c"}}),
		Entry("environment without =", map[string]any{"name": "/bin/true", "environment": []any{"$(id)"}}),
		Entry("timeout not a duration", map[string]any{"name": "/bin/true", "timeout": "10s; reboot"}),
	)

	DescribeTable("refuses archive and scaffold names no file system call can be given safely",
		func(typ string, props map[string]any) { refuse(typ, props) },
		Entry("archive name with NUL", "archive", map[string]any{"name": "/tmp/a\x00.tar.gz", "url": "https://example.com/a.tar.gz", "owner": "root", "group": "root"}),
		Entry("archive name relative", "archive", map[string]any{"name": "../a.tar.gz", "url": "https://example.com/a.tar.gz", "owner": "root", "group": "root"}),
		Entry("archive name not clean", "archive", map[string]any{"name": "/tmp/../etc/a.tar.gz", "url": "https://example.com/a.tar.gz", "owner": "root", "group": "root"}),
		Entry("archive url with a newline", "archive", map[string]any{"name": "/tmp/a.tar.gz", "url": "https://example.com/a.tar.gz\nHost: evil", "owner": "root", "group": "root"}),
		Entry("archive header with a newline", "archive", map[string]any{"name": "/tmp/a.tar.gz", "url": "https://example.com/a.tar.gz", "owner": "root", "group": "root", "headers": map[string]any{"X": "a\r\nHost: evil"}}),
		Entry("archive owner with a NUL", "archive", map[string]any{"name": "/tmp/a.tar.gz", "url": "https://example.com/a.tar.gz", "owner": "root\x00", "group": "root"}),
		Entry("archive owner starting with a hyphen", "archive", map[string]any{"name": "/tmp/a.tar.gz", "url": "https://example.com/a.tar.gz", "owner": "-root", "group": "root"}),
		Entry("archive group with a look-alike", "archive", map[string]any{"name": "/tmp/a.tar.gz", "url": "https://example.com/a.tar.gz", "owner": "root", "group": "r\u043e\u043et"}),
		Entry("archive checksum with metacharacters", "archive", map[string]any{"name": "/tmp/a.tar.gz", "url": "https://example.com/a.tar.gz", "owner": "root", "group": "root", "checksum": "$(id)"}),
		Entry("scaffold name with NUL", "scaffold", map[string]any{"name": "/tmp/site\x00", "source": "/tmp/src"}),
		Entry("scaffold name with a newline", "scaffold", map[string]any{"name": "/tmp/site\nx", "source": "/tmp/src"}),
		Entry("scaffold name relative", "scaffold", map[string]any{"name": "site", "source": "/tmp/src"}),
		Entry("scaffold name not clean", "scaffold", map[string]any{"name": "/tmp/x/../../etc", "source": "/tmp/src"}),
		Entry("scaffold post command with NUL", "scaffold", map[string]any{"name": "/tmp/site", "source": "/tmp/src", "post": []any{map[string]any{"*.go": "gofmt -w\x00 {}"}}}),
		Entry("scaffold post glob with NUL", "scaffold", map[string]any{"name": "/tmp/site", "source": "/tmp/src", "post": []any{map[string]any{"*\x00": "gofmt -w"}}}),
	)
})
