package catalog_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/archivetype"
	"github.com/ccm-fleet/ccm/resources/catalog"
	"github.com/ccm-fleet/ccm/resources/engine"
	"github.com/ccm-fleet/ccm/resources/filetype"
)

// decode makes validated properties of typ the way the engine does.
func decode(typ string, props map[string]any) resources.Properties {
	e, ok := catalog.Lookup(typ)
	Expect(ok).To(BeTrue(), typ)
	p, err := engine.Decode(e.Type, props)
	Expect(err).ToNot(HaveOccurred())
	return p
}

// obj is a host object as the tables write it.
type obj struct {
	kind   catalog.Kind
	check  string
	value  string
	tree   bool
	base   string
	runner catalog.Runner
	search string
	ph     bool
}

func simplify(os []catalog.HostObject) []obj {
	out := make([]obj, len(os))
	for i, o := range os {
		out[i] = obj{o.Kind, o.Check, o.Value, o.Tree, o.Base, o.Runner, o.Search, o.Placeholder}
	}
	return out
}

var _ = Describe("Catalog", func() {
	It("holds every type the protocol knows, once, sorted, with the built-in providers", func() {
		Expect(catalog.Names()).To(Equal(protocol.Types))
		for _, e := range catalog.Entries() {
			Expect(e.Type.Name()).To(Equal(e.Name))
			Expect(e.Providers).ToNot(BeEmpty(), e.Name)
			got, ok := catalog.ForProperties(e.Type.NewProperties())
			Expect(ok).To(BeTrue())
			Expect(got.Name).To(Equal(e.Name))
		}
		Expect(catalog.Providers()).To(HaveKeyWithValue("exec", []string{"posix", "shell"}))
	})

	It("refuses a type it does not hold and properties of another type", func() {
		_, err := catalog.Objects("nosuch", &filetype.Properties{}, "")
		Expect(err).To(MatchError(resources.ErrUnknownType))
		_, err = catalog.Objects("archive", &filetype.Properties{}, "")
		Expect(err).To(MatchError(resources.ErrUnknownType))
		_, ok := catalog.ForProperties(nil)
		Expect(ok).To(BeFalse())
	})

	hc := []any{map[string]any{"command": "/usr/lib/nagios/check_http -H localhost"}}
	health := obj{kind: catalog.Command, check: "health_checks[0]", value: "/usr/lib/nagios/check_http -H localhost", runner: catalog.RunDirect}

	DescribeTable("declares every host object of a resource",
		func(typ string, props map[string]any, workingDir string, want []obj) {
			got, err := catalog.Objects(typ, decode(typ, props), workingDir)
			Expect(err).ToNot(HaveOccurred())
			Expect(simplify(got)).To(Equal(want))
		},
		Entry("file: name written and, with content, read (a diff shows it); source read", "file",
			map[string]any{"name": "/srv/www/f", "source": "/etc/../etc/shadow", "owner": "root", "group": "root", "mode": "0644", "health_checks": hc}, "",
			[]obj{
				{kind: catalog.PathWrite, check: "name", value: "/srv/www/f"},
				{kind: catalog.PathRead, check: "name", value: "/srv/www/f"},
				{kind: catalog.PathRead, check: "source", value: "/etc/shadow"},
				health,
			}),
		Entry("file: a relative source joined to the working directory", "file",
			map[string]any{"name": "/srv/www/f", "source": "files/a.conf", "owner": "root", "group": "root", "mode": "0644"}, "/tmp/ccm-manifest-1",
			[]obj{
				{kind: catalog.PathWrite, check: "name", value: "/srv/www/f"},
				{kind: catalog.PathRead, check: "name", value: "/srv/www/f"},
				{kind: catalog.PathRead, check: "source", value: "/tmp/ccm-manifest-1/files/a.conf", base: "/tmp/ccm-manifest-1"},
			}),
		Entry("file: absent reads nothing", "file",
			map[string]any{"name": "/srv/www/f", "ensure": "absent"}, "",
			[]obj{{kind: catalog.PathWrite, check: "name", value: "/srv/www/f"}}),
		Entry("scaffold: target written and read, source read, post commands", "scaffold",
			map[string]any{"name": "/srv/site", "source": "/srv/tmpl", "post": []any{map[string]any{"*.go": "go fmt {}"}}}, "",
			[]obj{
				{kind: catalog.PathWrite, check: "target", value: "/srv/site", tree: true},
				{kind: catalog.PathRead, check: "target", value: "/srv/site", tree: true},
				{kind: catalog.PathRead, check: "source", value: "/srv/tmpl", tree: true},
				{kind: catalog.Command, check: "post[0] *.go", value: "go fmt {}", runner: catalog.RunDirect, ph: true},
			}),
		Entry("scaffold: a file:// source is a URL and a path read", "scaffold",
			map[string]any{"name": "/srv/site", "source": "file:///root/tmpl", "ensure": "absent"}, "",
			[]obj{
				{kind: catalog.PathWrite, check: "target", value: "/srv/site", tree: true},
				{kind: catalog.URL, check: "source", value: "file:///root/tmpl"},
				{kind: catalog.PathRead, check: "source", value: "/root/tmpl", tree: true},
			}),
		Entry("archive: url fetched, name and extract_parent written, creates read", "archive",
			map[string]any{"name": "/srv/a.tar.gz", "url": "https://user:pw@example.com/a.tar.gz", "extract_parent": "/srv/app", "creates": "/srv/app/bin", "owner": "root", "group": "root"}, "",
			[]obj{
				{kind: catalog.URL, check: "url", value: archivetype.RedactURL("https://user:pw@example.com/a.tar.gz")},
				{kind: catalog.PathWrite, check: "name", value: "/srv/a.tar.gz"},
				{kind: catalog.PathWrite, check: "extract_parent", value: "/srv/app", tree: true},
				{kind: catalog.PathRead, check: "creates", value: "/srv/app/bin"},
			}),
		Entry("exec: command and guards by the provider, environment, cwd, path, creates", "exec",
			map[string]any{"name": "make install", "onlyif": "test -f Makefile", "unless": "test -f /usr/local/bin/app", "environment": []any{"LANG=C"}, "cwd": "/srv/src", "path": "/usr/bin:/bin", "creates": "/usr/local/bin/app", "health_checks": hc}, "",
			[]obj{
				{kind: catalog.Command, check: "command", value: "make install", runner: catalog.RunByProvider, search: "/usr/bin:/bin"},
				{kind: catalog.Command, check: "onlyif", value: "test -f Makefile", runner: catalog.RunByProvider, search: "/usr/bin:/bin"},
				{kind: catalog.Command, check: "unless", value: "test -f /usr/local/bin/app", runner: catalog.RunByProvider, search: "/usr/bin:/bin"},
				{kind: catalog.Environment, check: "environment", value: "LANG=C"},
				{kind: catalog.WorkingDir, check: "cwd", value: "/srv/src"},
				{kind: catalog.SearchPath, check: "path", value: "/usr/bin:/bin"},
				{kind: catalog.PathRead, check: "creates", value: "/usr/local/bin/app"},
				health,
			}),
		Entry("package: its name", "package", map[string]any{"name": "nginx"}, "",
			[]obj{{kind: catalog.Package, check: "name", value: "nginx"}}),
		Entry("service: its name", "service", map[string]any{"name": "nginx", "ensure": "running"}, "",
			[]obj{{kind: catalog.Service, check: "name", value: "nginx"}}),
	)

	It("looks exec commands up in the base PATH when the resource gives none", func() {
		got, err := catalog.Objects("exec", decode("exec", map[string]any{"name": "true"}), "")
		Expect(err).ToNot(HaveOccurred())
		Expect(got[0].Search).ToNot(BeEmpty())
		Expect(got[0].String()).To(Equal(`command command "true"`))
	})
})

var _ = Describe("Every catalogued type on the wire", func() {
	// A reply whose event carried the state of a type the protocol could
	// not decode was refused whole by every reader: a fleet manifest with
	// an apply child answered "unknown resource type \"apply\"".
	It("has a state document the protocol decodes", func() {
		Expect(catalog.Names()).ToNot(BeEmpty())
		for _, name := range catalog.Names() {
			st, err := protocol.NewState(name)
			Expect(err).ToNot(HaveOccurred(), name)
			Expect(st).ToNot(BeNil(), name)
		}
	})
})
