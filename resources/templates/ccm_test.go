package templates_test

import (
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/resources/templates"
)

var _ = Describe("CCM's expression syntax and variables", func() {
	facts := map[string]any{
		"role": "web",
		"host": map[string]any{"info": map[string]any{"hostname": "web01", "platformFamily": "debian", "hostId": "h-1"}},
		"network": map[string]any{"interfaces": []any{
			map[string]any{"name": "eth0", "mtu": 1500.0},
		}},
	}
	data := map[string]any{"package_name": "nginx", "packages": []any{"a", "b", "c"}}

	DescribeTable("${ } is accepted wherever {{ }} is",
		func(in string, want any) {
			env := templates.New(facts, data, templates.WithEnviron([]string{"HOME=/home/ccm"}))
			Expect(env.Expand(in)).To(Equal(want))
		},
		Entry("a lookup", "${ lookup('facts.role') }", "web"),
		Entry("inside text", "role:${ lookup('facts.role') }!", "role:web!"),
		Entry("both spellings in one string", "${ Facts.role }-{{ Data.package_name }}", "web-nginx"),
		Entry("no padding", "${Data.package_name}", "nginx"),
		Entry("Facts with the JSON name", "${ Facts.host.info.hostname }", "web01"),
		Entry("Facts with gopsutil's Go name", "${ Facts.host.info.Hostname }", "web01"),
		Entry("Facts with an initialism", "${ Facts.host.info.HostID }", "h-1"),
		Entry("Facts in a list", "${ Facts.network.interfaces[0].MTU }", "1500"),
		Entry("Environ", "${ Environ.HOME }", "/home/ccm"),
		Entry("environ via lookup with a default", "${ lookup('environ.MY_VAR', 'default') }", "default"),
		Entry("a map literal inside ${ } (braces balance)", "${ {'a': 1}.a }", "1"),
		Entry("a closing brace inside a quoted string", `${ "}" + Data.package_name }`, "}nginx"),
		Entry("}} inside a quoted string of {{ }}", `{{ "}}" + Data.package_name }}`, "}}nginx"),
		Entry("${{ is a literal $ before {{ }}", "${{ Data.package_name }}", "$nginx"),
		Entry("an unclosed ${ is text", "cost ${ 5", "cost ${ 5"),
		Entry("a list keeps its type", "${ Data.packages }", []any{"a", "b", "c"}),
		Entry("GJSON's # gives a list's length", "${ lookup('data.packages.#') }", "3"),
	)

	It("fails, instead of rendering empty, when an expression reads a key that does not exist", func() {
		env := templates.New(facts, data)
		for _, src := range []string{"${ Facts.host.info.nope }", "x{{ Data.missing }}y", "${ facts.nope }"} {
			_, err := env.Expand(src)
			Expect(err).To(MatchError(templates.ErrMissingKey), src)
			Expect(err.Error()).To(ContainSubstring("gave no value"), src)
		}
	})

	It("refuses Environ when the environment is not exposed", func() {
		env := templates.New(facts, data)
		_, err := env.Expand("${ Environ.HOME }")
		Expect(err).To(MatchError(templates.ErrDisabled))
		Expect(env.Expand("${ Facts.role }")).To(Equal("web"))
	})

	It("ExpandMatch: an entry matches when a template gives a value; missing facts give no match with WithMissingEmpty", func() {
		env := templates.New(facts, nil, templates.WithMissingEmpty())
		for in, want := range map[string]struct {
			out     string
			matched bool
		}{
			"role:${ lookup('facts.role') }":  {"role:web", true},
			"env:${ lookup('facts.env') }":    {"env:", false},
			"env:{{ Facts.env }}":             {"env:", false},
			"default":                         {"default", true},
			"":                                {"", false},
			"${ lookup('facts.env') }:static": {":static", false},
		} {
			out, matched, err := env.ExpandMatch(in)
			Expect(err).NotTo(HaveOccurred(), in)
			Expect(out).To(Equal(want.out), in)
			Expect(matched).To(Equal(want.matched), in)
		}
	})

	Describe("functions", func() {
		var dir string
		var env *templates.Env
		BeforeEach(func() {
			dir = GinkgoT().TempDir()
			Expect(os.WriteFile(filepath.Join(dir, "motd.templ"), []byte("Welcome to ${ Facts.host.info.Hostname } ({{ Data.package_name }})"), 0o600)).To(Succeed())
			Expect(os.WriteFile(filepath.Join(dir, "motd.jet"), []byte("[[ Facts.host.info.Hostname ]] runs [[ lookup(\"data.package_name\") ]]"), 0o600)).To(Succeed())
			Expect(os.WriteFile(filepath.Join(dir, "plain.txt"), []byte("plain ${ not expanded }"), 0o600)).To(Succeed())
			env = templates.New(facts, data, templates.WithFiles(dir))
		})

		It("readFile() and file() read below the working directory, unexpanded", func() {
			Expect(env.Expand("${ readFile('plain.txt') }")).To(Equal("plain ${ not expanded }"))
			Expect(env.Expand("${ file('plain.txt') }")).To(Equal("plain ${ not expanded }"))
		})

		It("template() expands a .templ file, a .jet file through jet(), or its argument", func() {
			Expect(env.Expand("${ template('motd.templ') }")).To(Equal("Welcome to web01 (nginx)"))
			Expect(env.Expand("${ template('motd.jet') }")).To(Equal("web01 runs nginx"))
			Expect(env.Expand(`${ template("{{ Facts.role }}") }`)).To(Equal("web"))
		})

		It("jet() renders [[ ]] by default, or the delimiters given", func() {
			Expect(env.Expand(`${ jet("[[ Facts.host.info.Hostname ]]/[[ facts.role ]]/[[ Data.package_name ]]") }`)).To(Equal("web01/web/nginx"))
			Expect(env.Expand(`${ jet("<% Facts.role %>", "<%", "%>") }`)).To(Equal("web"))
			Expect(env.Expand(`${ jet('motd.jet') }`)).To(Equal("web01 runs nginx"))
		})

		It("jet() fails on a lookup of a missing key and on a bad template", func() {
			_, err := env.Expand("${ jet(`[[ lookup(\"facts.nope\") ]]`) }")
			Expect(err).To(MatchError(ContainSubstring(`lookup "facts.nope": missing key`)))
			_, err = env.Expand(`${ jet("[[ if ]]") }`)
			Expect(err).To(MatchError(templates.ErrExpression))
		})

		It("file functions stay unavailable without WithFiles, also inside jet()", func() {
			bare := templates.New(facts, data)
			_, err := bare.Expand("${ template('motd.templ') }")
			Expect(err).To(MatchError(templates.ErrDisabled))
			_, err = bare.Expand("${ jet(`[[ file(\"plain.txt\") ]]`) }")
			Expect(err).To(MatchError(ContainSubstring("not available")))
		})

		It("kvGet() without a store says it is not available", func() {
			_, err := env.Expand(`${ kvGet("secrets", "x") }`)
			Expect(err).To(MatchError(templates.ErrDisabled))
		})
	})
})
