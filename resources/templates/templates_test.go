package templates_test

import (
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/resources/templates"
)

var _ = Describe("Env", func() {
	var env *templates.Env
	facts := map[string]any{
		"hostname": "web1",
		"os":       "debian",
		"cpus":     4,
		"host":     map[string]any{"info": map[string]any{"platformFamily": "debian"}},
		"disks":    []any{"sda", "sdb"},
	}
	data := map[string]any{"motd": "managed", "ports": []any{80, 443}}

	BeforeEach(func() { env = templates.New(facts, data) })

	DescribeTable("expands templates in strings",
		func(in string, want any) {
			out, err := env.Expand(in)
			Expect(err).ToNot(HaveOccurred())
			Expect(out).To(Equal(want))
		},
		Entry("plain text is untouched", "no templates", "no templates"),
		Entry("a fact", "{{ lookup('facts.hostname') }}", "web1"),
		Entry("inside text", "/tmp/{{ lookup('facts.hostname') }}/motd", "/tmp/web1/motd"),
		Entry("two templates", "{{ lookup('facts.os') }}-{{ lookup('data.motd') }}", "debian-managed"),
		Entry("nested dotted path", "{{ lookup('facts.host.info.platformFamily') }}", "debian"),
		Entry("list index", "{{ lookup('facts.disks.1') }}", "sdb"),
		Entry("default for a missing key", "{{ lookup('facts.role', 'none') }}", "none"),
		Entry("numbers become text", "cpus={{ lookup('facts.cpus') }}", "cpus=4"),
		Entry("a whole-template list keeps its type", "{{ lookup('data.ports') }}", []any{80, 443}),
		Entry("direct variable access", "{{ facts.os }}", "debian"),
		Entry("expressions", "{{ facts.cpus * 2 }}", "8"),
	)

	It("fails clearly on a missing key without default", func() {
		_, err := env.Expand("{{ lookup('facts.role') }}")
		Expect(err).To(MatchError(templates.ErrMissingKey))
		Expect(err.Error()).To(ContainSubstring(`"facts.role"`))
	})

	It("fails clearly on a syntax error", func() {
		_, err := env.Expand("{{ lookup('facts.os' }}")
		Expect(err).To(MatchError(templates.ErrExpression))
		Expect(err).To(MatchError(`expression failed: "lookup('facts.os'": unexpected token EOF (1:17)`))
	})

	It("says a runtime failure on one line, with its position and without the source snippet", func() {
		_, err := env.Expand("{{ 1 / nosuch }}")
		Expect(err).To(MatchError(templates.ErrExpression))
		Expect(err.Error()).ToNot(ContainSubstring("\n"))
		Expect(err.Error()).To(HavePrefix(`expression failed: "1 / nosuch": `))
	})

	It("does not expose the environment or files unless asked", func() {
		_, err := env.Expand("{{ lookup('environ.HOME') }}")
		Expect(err).To(MatchError(templates.ErrDisabled))
		_, err = env.Expand("{{ file('x') }}")
		Expect(err).To(MatchError(templates.ErrDisabled))
	})

	// CCM's CLI page spells environment lookups lookup("env.X"); env. is
	// environ. under another name, with the same rule: local runs only.
	It("reads env.X as environ.X, only where the environment is exposed", func() {
		e := templates.New(facts, data, templates.WithEnviron([]string{"APP=env-canary-51c"}))
		Expect(e.ExpandString("{{ lookup('env.APP') }} ${ lookup(\"env.APP\") }")).To(Equal("env-canary-51c env-canary-51c"))
		Expect(e.ExpandString("{{ lookup('env.NOPE', 'unset') }}")).To(Equal("unset"))
		_, err := e.Expand("{{ lookup('env.NOPE') }}")
		Expect(err).To(MatchError(templates.ErrMissingKey))

		_, err = env.Expand("{{ lookup('env.HOME') }}")
		Expect(err).To(MatchError(templates.ErrDisabled))
		_, err = env.Expand("{{ lookup('env.HOME', 'fallback') }}")
		Expect(err).To(MatchError(templates.ErrDisabled))
	})

	It("exposes the environment and working directory files when asked", func() {
		dir := GinkgoT().TempDir()
		Expect(os.WriteFile(filepath.Join(dir, "greeting"), []byte("hello"), 0o600)).To(Succeed())
		e := templates.New(facts, data, templates.WithEnviron([]string{"APP=demo"}), templates.WithFiles(dir))
		Expect(e.ExpandString("{{ lookup('environ.APP') }} {{ file('greeting') }}")).To(Equal("demo hello"))
		_, err := e.Expand("{{ file('../etc/passwd') }}")
		Expect(err).To(MatchError(ContainSubstring("only paths inside the working directory")))
	})

	It("expands every string in nested values but skips the named keys", func() {
		in := map[string]any{
			"name":    "/srv/{{ lookup('facts.hostname') }}",
			"list":    []any{"{{ lookup('facts.os') }}", 3},
			"nested":  map[string]any{"x": "{{ lookup('data.motd') }}"},
			"control": map[string]any{"if": "{{ nope }}"},
		}
		out, err := env.ExpandValue(in, "control")
		Expect(err).ToNot(HaveOccurred())
		Expect(out).To(Equal(map[string]any{
			"name":    "/srv/web1",
			"list":    []any{"debian", 3},
			"nested":  map[string]any{"x": "managed"},
			"control": map[string]any{"if": "{{ nope }}"},
		}))
		Expect(in["name"]).To(Equal("/srv/{{ lookup('facts.hostname') }}"), "input must not change")
	})

	It("names the property whose template failed", func() {
		_, err := env.ExpandValue(map[string]any{"content": "{{ lookup('data.nope') }}"})
		Expect(err).To(MatchError(ContainSubstring("property content")))
	})

	DescribeTable("evaluates conditions",
		func(src string, want bool) {
			Expect(env.EvalBool(src)).To(Equal(want))
		},
		Entry("equality", "facts.os == 'debian'", true),
		Entry("lookup", "lookup('facts.os') == 'rhel'", false),
		Entry("wrapped in braces", "{{ facts.cpus > 2 }}", true),
		Entry("default in a condition", "lookup('facts.virtual', 'none') == 'docker'", false),
	)

	It("refuses a condition that is not true or false", func() {
		_, err := env.EvalBool("facts.os")
		Expect(err).To(MatchError(ContainSubstring("must be true or false")))
	})
})

var _ = DescribeTable("Check compiles templates without evaluating them",
	func(s string, want string) {
		err := templates.Check(s)
		if want == "" {
			Expect(err).NotTo(HaveOccurred())
			return
		}
		Expect(err).To(MatchError(templates.ErrExpression))
		Expect(err).To(MatchError(ContainSubstring(want)))
	},
	Entry("no template", "plain text", ""),
	Entry("a lookup of a fact no one has here", "/srv/{{ lookup('facts.identity') }}/motd", ""),
	Entry("an unclosed call", "/srv/{{ lookup('facts.identity' }}", `"lookup('facts.identity'": unexpected token EOF`),
	Entry("the second template broken", "{{ 1 }} and {{ 1 + }}", `"1 +"`),
)

var _ = DescribeTable("CheckCondition compiles a condition, bare or as one template",
	func(s string, ok bool) {
		Expect(templates.CheckCondition(s) == nil).To(Equal(ok))
	},
	Entry("bare", "facts.os == 'debian'", true),
	Entry("templated", "{{ facts.os == 'debian' }}", true),
	Entry("broken", "facts.os ==", false),
)
