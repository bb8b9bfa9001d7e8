package manifest_test

import (
	"github.com/ccm-fleet/ccm/internal/hostile"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/manifest"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/engine"
)

// resolve parses doc and resolves it with facts.
func resolve(doc string, facts map[string]any) *manifest.Resolved {
	GinkgoHelper()
	m, err := manifest.Parse([]byte(doc), manifest.ParseOptions{})
	Expect(err).ToNot(HaveOccurred())
	r, err := m.Resolve(manifest.RunOptions{Facts: facts})
	Expect(err).ToNot(HaveOccurred())
	return r
}

// specNames lists type#name of each resolved spec.
func specNames(specs []engine.Spec) []string {
	out := make([]string, 0, len(specs))
	for _, s := range specs {
		out = append(out, s.Type+"#"+s.Properties["name"].(string))
	}
	return out
}

var _ = Describe("Parse", func() {
	It("reads the list form with defaults merged under each entry's own properties", func() {
		r := resolve(`
ccm:
  resources:
    - package:
        - nginx: {}
        - defaults: {ensure: present, provider: apt}
        - curl: {ensure: latest}
        - jq:
`, nil)
		Expect(specNames(r.Resources)).To(Equal([]string{"package#nginx", "package#curl", "package#jq"}))
		Expect(r.Resources[0].Properties).To(Equal(map[string]any{"name": "nginx", "ensure": "present", "provider": "apt"}))
		Expect(r.Resources[1].Properties).To(Equal(map[string]any{"name": "curl", "ensure": "latest", "provider": "apt"}))
		Expect(r.Resources[2].Properties).To(HaveKeyWithValue("ensure", "present"))
	})

	It("makes one resource per name of the single-object form, with the same properties", func() {
		r := resolve(`
ccm:
  resources:
    - package:
        name: [curl, jq]
        ensure: present
    - package:
        name: htop
`, nil)
		Expect(specNames(r.Resources)).To(Equal([]string{"package#curl", "package#jq", "package#htop"}))
		Expect(r.Resources[0].Properties).To(Equal(map[string]any{"name": "curl", "ensure": "present"}))
		Expect(r.Resources[1].Properties).To(Equal(map[string]any{"name": "jq", "ensure": "present"}))
	})

	It("makes one resource per element when a name template gives a list", func() {
		r := resolve(`
data: {pkgs: [vim, git]}
ccm:
  resources:
    - package:
        name: "{{ lookup('data.pkgs') }}"
    - package:
        - "{{ lookup('data.none', []) }}": {}
`, nil)
		Expect(specNames(r.Resources)).To(Equal([]string{"package#vim", "package#git"}))
	})

	It("sets each key of a hash given as \"*\" as a property, in entries and defaults", func() {
		r := resolve(`
data:
  owned: {owner: root, group: root}
ccm:
  resources:
    - file:
        - defaults: {"*": "{{ lookup('data.owned') }}", mode: "0600"}
        - /tmp/a: {content: a}
        - /tmp/b: {"*": {mode: "0644", content: b}}
`, nil)
		Expect(r.Resources[0].Properties).To(Equal(map[string]any{"name": "/tmp/a", "owner": "root", "group": "root", "mode": "0600", "content": "a"}))
		Expect(r.Resources[1].Properties).To(Equal(map[string]any{"name": "/tmp/b", "owner": "root", "group": "root", "mode": "0644", "content": "b"}))
	})

	It("expands templates in properties but leaves control expressions alone", func() {
		r := resolve(`
data: {motd: hello}
ccm:
  pre_message: "on {{ lookup('facts.hostname') }}"
  post_message: "said {{ lookup('data.motd') }}"
  resources:
    - file:
        - "/tmp/{{ lookup('facts.hostname') }}":
            content: "{{ lookup('data.motd') }}"
            control: {if: "{{ facts.os == 'debian' }}"}
`, map[string]any{"hostname": "web1", "os": "debian"})
		Expect(r.Resources[0].Properties).To(Equal(map[string]any{
			"name": "/tmp/web1", "content": "hello", "control": map[string]any{"if": "{{ facts.os == 'debian' }}"},
		}))
		Expect(r.PreMessage).To(Equal("on web1"))
		Expect(r.PostMessage).To(Equal("said hello"))
	})

	It("accepts JSON and empty manifests", func() {
		m, err := manifest.Parse([]byte(`{"ccm": {"resources": [{"exec": [{"/bin/true": {}}]}]}}`), manifest.ParseOptions{})
		Expect(err).ToNot(HaveOccurred())
		r, err := m.Resolve(manifest.RunOptions{})
		Expect(err).ToNot(HaveOccurred())
		Expect(specNames(r.Resources)).To(Equal([]string{"exec#/bin/true"}))

		m, err = manifest.Parse([]byte("data: {}\n"), manifest.ParseOptions{})
		Expect(err).ToNot(HaveOccurred())
		r, err = m.Resolve(manifest.RunOptions{})
		Expect(err).ToNot(HaveOccurred())
		Expect(r.Resources).To(BeEmpty())
	})

	It("renders the resolved manifest as YAML of data and resources", func() {
		r := resolve(`
data: {motd: hi}
ccm:
  resources:
    - file:
        - /tmp/x: {content: "{{ lookup('data.motd') }}"}
`, nil)
		out, err := r.YAML()
		Expect(err).ToNot(HaveOccurred())
		Expect(string(out)).To(Equal("data:\n  motd: hi\nresources:\n  - type: file\n    properties:\n      content: hi\n      name: /tmp/x\n"))
	})

	It("loads a file with its directory as the working directory", func() {
		dir := GinkgoT().TempDir()
		path := filepath.Join(dir, "m.yaml")
		Expect(os.WriteFile(path, []byte("ccm:\n  resources:\n    - file:\n        - /tmp/x: {owner: root}\n"), 0o600)).To(Succeed())
		m, err := manifest.Load(path)
		Expect(err).ToNot(HaveOccurred())
		Expect(m.WorkingDir()).To(Equal(dir))
	})

	It("refuses a 9-level alias bomb in a file at once", func() {
		path := filepath.Join(GinkgoT().TempDir(), "bomb.yaml")
		Expect(os.WriteFile(path, hostile.AliasBomb("data"), 0o600)).To(Succeed())
		_, err := manifest.Load(path)
		Expect(err).To(MatchError(resources.ErrInvalid))
		Expect(err).To(MatchError("manifest " + path + ": data.a0: YAML anchors are not accepted (line 2)"))
	})

	It("refuses YAML anchors and aliases in files too", func() {
		path := filepath.Join(GinkgoT().TempDir(), "m.yaml")
		Expect(os.WriteFile(path, []byte(`
data:
  owner: &o root
ccm:
  resources:
    - file:
        - /tmp/x: {owner: *o}
`), 0o600)).To(Succeed())
		_, err := manifest.Load(path)
		Expect(err).To(MatchError(resources.ErrInvalid))
		Expect(err).To(MatchError(ContainSubstring("data.owner: YAML anchors are not accepted")))

		body, _ := os.ReadFile(path)
		_, err = manifest.Parse(body, manifest.ParseOptions{})
		Expect(err).To(MatchError(ContainSubstring("YAML anchors are not accepted")))
	})

	DescribeTable("refuses bad manifests with an error naming the key and the resource",
		func(doc, want string) {
			_, err := manifest.Parse([]byte(doc), manifest.ParseOptions{})
			Expect(err).To(MatchError(resources.ErrInvalid))
			Expect(err.Error()).To(Equal(want))
		},
		Entry("unknown top-level key", "datum: {}\n", `manifest: unknown key "datum" (allowed: data, sensitive_data, data_rules, hierarchy, overrides, ccm)`),
		Entry("sensitive_data not a list", "sensitive_data: secret\n", `sensitive_data: expected a list of data keys, got a string`),
		Entry("sensitive_data not a key", "sensitive_data: [\"db..pw\"]\n", `sensitive_data[0]: "db..pw" is not a dotted data key such as db.password`),
		Entry("sensitive_data a template", "sensitive_data: [\"{{ x }}\"]\n", `sensitive_data[0]: "{{ x }}" is not a dotted data key such as db.password`),
		Entry("sensitive_data a number", "sensitive_data: [1]\n", `sensitive_data[0]: expected a data key, got a number`),
		Entry("unknown ccm key", "ccm: {fail_on_eror: true}\n", `ccm: unknown key "fail_on_eror" (allowed: fail_on_error, pre_message, post_message, resources, resources_jet_file)`),
		Entry("unknown hierarchy key", "hierarchy: {ordr: []}\n", `hierarchy: unknown key "ordr" (allowed: order, merge)`),
		Entry("bad merge", "hierarchy: {merge: shallow}\n", `hierarchy.merge: shallow is not "first" or "deep"`),
		Entry("override not an object", "overrides: {'os:x': 3}\n", `overrides["os:x"]: expected an object, got a number`),
		Entry("unknown property in the list form", `
ccm:
  resources:
    - package: [{nginx: {}}]
    - exec: [{/bin/true: {}}]
    - file:
        - /etc/motd: {content: x, colour: red}
`, `resources[2] file#/etc/motd: unknown property "colour"`),
		Entry("unknown property in the single-object form", `
ccm:
  resources:
    - package: {name: [curl, jq], ensur: present}
`, `resources[0] package#[curl, jq]: unknown property "ensur"`),
		Entry("unknown property in defaults", `
ccm:
  resources:
    - package: [{defaults: {enusre: present}}, {nginx: {}}]
`, `resources[0] package#defaults: unknown property "enusre"`),
		Entry("unknown key inside control", `
ccm:
  resources:
    - exec: [{/bin/true: {control: {iff: "true"}}}]
`, `resources[0] exec#/bin/true: unknown property "control.iff"`),
		Entry("unknown key inside a literal *", `
ccm:
  resources:
    - exec: [{/bin/true: {"*": {timeot: 5s}}}]
`, `resources[0] exec#/bin/true: unknown property "*.timeot"`),
		Entry("unknown type", `
ccm:
  resources:
    - pakage: [{nginx: {}}]
`, `resources[0]: unknown resource type "pakage" (known: apply, archive, exec, file, group, package, scaffold, service, user)`),
		Entry("two types in one item", `
ccm:
  resources:
    - {package: [{nginx: {}}], service: [{nginx: {}}]}
`, `resources[0]: each item maps one resource type to its resources (e.g. file: [...]), got an object with 2 keys`),
		Entry("two names in one list entry", `
ccm:
  resources:
    - package: [{nginx: {}, curl: {}}]
`, `resources[0] package, entry 0: expected one {name: properties} pair, got an object with 2 keys`),
		Entry("single-object form without name", `
ccm:
  resources:
    - package: {ensure: present}
`, `resources[0] package: the single-object form needs a name (a string or a list of strings)`),
		Entry("name in a list entry", `
ccm:
  resources:
    - package: [{nginx: {name: apache}}]
`, `resources[0] package#nginx: property name is not allowed in a list entry, the entry's key is the name (use the single-object form for name lists)`),
		Entry("two defaults", `
ccm:
  resources:
    - package: [{defaults: {}}, {defaults: {}}]
`, `resources[0] package: more than one defaults entry`),
		Entry("properties not an object", `
ccm:
  resources:
    - package: [{nginx: present}]
`, `resources[0] package#nginx: properties must be an object, got a string`),
		Entry("not an object", "[1, 2]\n", `manifest: expected an object, got array`),
		Entry("invalid YAML", "ccm: [\n", `manifest: invalid YAML at line 1, column 6: sequence end token ']' not found`),
	)

	DescribeTable("refuses resolutions that cannot run, naming the resource",
		func(doc, want string, sentinel error) {
			m, err := manifest.Parse([]byte(doc), manifest.ParseOptions{})
			Expect(err).ToNot(HaveOccurred())
			_, err = m.Resolve(manifest.RunOptions{})
			Expect(err).To(MatchError(resources.ErrInvalid))
			Expect(err).To(MatchError(sentinel))
			Expect(err.Error()).To(Equal(want))
		},
		Entry("a duplicate resource", `
ccm:
  resources:
    - package: [{nginx: {}}]
    - package: {name: [curl, nginx]}
`, `resources[1] package#nginx: package#nginx is declared twice (also resources[0] package#nginx)`, manifest.ErrDuplicate),
		Entry("a name equal to another's alias", `
ccm:
  resources:
    - exec: [{/bin/true: {alias: ok}}, {ok: {}}]
`, `resources[0] exec#/bin/true: exec#ok is declared twice (also resources[0] exec#ok)`, manifest.ErrDuplicate),
		Entry("a require naming no resource", `
ccm:
  resources:
    - package: [{nginx: {}}]
    - service: [{nginx: {require: [package#ngix]}}]
`, `resources[1] service#nginx: require package#ngix: no resource in the manifest is package#ngix`, manifest.ErrUnknownReference),
		Entry("a subscribe naming no resource", `
ccm:
  resources:
    - service: [{nginx: {subscribe: [file#/etc/nginx.conf]}}]
`, `resources[0] service#nginx: subscribe file#/etc/nginx.conf: no resource in the manifest is file#/etc/nginx.conf`, manifest.ErrUnknownReference),
		Entry("a require of a later resource", `
ccm:
  resources:
    - service: [{nginx: {require: [package#nginx]}}]
    - package: [{nginx: {}}]
`, `resources[0] service#nginx: require package#nginx: package#nginx is declared later (resources[1] package#nginx); resources run in declaration order`, manifest.ErrUnknownReference),
		Entry("a property set directly and through *", `
ccm:
  resources:
    - file: [{/tmp/x: {owner: root, "*": {owner: nobody}}}]
`, `resources[0] file#/tmp/x: property owner is set both directly and through *`, resources.ErrInvalid),
		Entry("a template error", `
ccm:
  resources:
    - file: [{/tmp/x: {content: "{{ lookup('data.nope') }}"}}]
`, `resources[0] file#/tmp/x: template: property content: expression failed: "lookup('data.nope')": lookup "data.nope": missing key (1:1)`, resources.ErrInvalid),
	)
})
