package templates_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/resources/templates"
)

// The attacks of issue 39 (findings 1, 2 and 6): templates that recurse
// until the Go runtime dies of a stack overflow, read the agent's
// environment or ask DNS, or grow until the agent dies of memory. Each must
// end in an error naming what it passed, and the process must keep going.
var _ = Describe("Template sandbox (issue 39 findings 1, 2, 6)", func() {
	var (
		dir string
		env *templates.Env
	)
	BeforeEach(func() {
		dir = GinkgoT().TempDir()
		env = templates.New(map[string]any{"host": "web1"}, map[string]any{"list": []any{"a", "b"}}, templates.WithFiles(dir))
	})
	write := func(name, body string) {
		Expect(os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644)).To(Succeed())
	}
	expandFails := func(s string, sentinel error, words string) {
		GinkgoHelper()
		v, err := env.Expand(s)
		Expect(err).To(HaveOccurred(), "rendered %.100v", v)
		Expect(errors.Is(err, sentinel)).To(BeTrue(), "%v does not wrap %v", err, sentinel)
		Expect(errors.Is(err, templates.ErrExpression)).To(BeTrue())
		Expect(err.Error()).To(ContainSubstring(words))
		Expect(len(err.Error())).To(BeNumerically("<", 2000), "one clear error, not one per level")
	}

	Context("recursion (finding 1)", func() {
		It("refuses the block that yields itself, the exact input that killed the agent", func() {
			expandFails(`{{ jet("[[ block r() ]][[ yield r() ]][[ end ]]") }}`, templates.ErrSandbox, "block r calls itself (recursion)")
		})
		It("refuses blocks that yield each other in a cycle, also through a yield's content", func() {
			expandFails(`{{ jet("[[ block a() ]][[ yield b() ]][[ end ]][[ block b() ]][[ yield a() ]][[ end ]]") }}`, templates.ErrSandbox, "calls itself")
			expandFails(`{{ jet("[[ block a() ]][[ yield content ]][[ end ]][[ block b() ]][[ yield a() content ]][[ yield b() ]][[ end ]][[ end ]]") }}`, templates.ErrSandbox, "calls itself")
		})
		It("refuses include, exec and includeIfExists of the template itself", func() {
			expandFails(`{{ jet("[[ include \"template\" ]]") }}`, templates.ErrSandbox, "include is not allowed")
			expandFails(`{{ jet("[[ exec(\"template\") ]]") }}`, templates.ErrSandbox, "exec() is not allowed")
			expandFails(`{{ jet("[[ includeIfExists(\"template\") ]]") }}`, templates.ErrSandbox, "includeIfExists() is not allowed")
		})
		It("refuses a try block, whose buffer no limit sees", func() {
			expandFails(`{{ jet("[[ try ]]x[[ end ]]") }}`, templates.ErrSandbox, "try is not allowed")
		})
		It("ends template() of a .templ file that templates itself at the depth limit", func() {
			write("self.templ", `again {{ template("self.templ") }}`)
			expandFails(`{{ template("self.templ") }}`, templates.ErrLimit, "nested more than 10 deep (depth limit)")
		})
		It("ends a .jet file that calls itself through template() at the depth limit", func() {
			write("self.jet", `[[ template("self.jet") ]]`)
			expandFails(`{{ jet("self.jet") }}`, templates.ErrLimit, "depth limit")
			expandFails(`{{ template("self.jet") }}`, templates.ErrLimit, "depth limit")
		})
		It("refuses brackets nested deeper than the parsers should recurse", func() {
			deep := strings.Repeat("(", 100000) + "1" + strings.Repeat(")", 100000)
			expandFails("{{ "+deep+" }}", templates.ErrLimit, "nesting limit")
			expandFails(`{{ jet("[[ `+deep+` ]]") }}`, templates.ErrLimit, "nesting limit")
		})
		It("turns a panic in Jet's own code into an error rather than a crash (found by FuzzRenderJet)", func() {
			for _, body := range []string{`[[range _]][[end ]]`, `[[ lookup(_) ]]`} {
				var buf bytes.Buffer
				err := env.RenderJetTo(&buf, "x.jet", body, "[[", "]]")
				Expect(errors.Is(err, templates.ErrEngine)).To(BeTrue(), "%s: %v", body, err)
			}
		})
		It("refuses what makes Jet's lexer panic in its own goroutine, which would end the process (found by FuzzRenderJet)", func() {
			expandFails(`{{ jet("[[_ߧ ]]") }}`, templates.ErrSandbox, "non-ASCII letter")
			var buf bytes.Buffer
			err := env.RenderJetTo(&buf, "x.jet", "[[_ߧ", "[[", "]]")
			Expect(errors.Is(err, templates.ErrSandbox)).To(BeTrue(), "%v", err)
			v, err := env.Expand(`{{ jet("naïve_été [[ \"_é\" + \"x\" ]]_é") }}`)
			Expect(err).To(HaveOccurred(), "inside an action even a string is refused: the check is a bound, not a parse (%v)", v)
			v, err = env.Expand(`{{ jet("naïve _été [[ data.list[0] ]]") }}`)
			Expect(err).ToNot(HaveOccurred())
			Expect(v).To(Equal("naïve _été a"))
		})
		It("keeps blocks, yields with content, ranges and + working", func() {
			v, err := env.Expand(`{{ jet("[[ block b(x=0) ]]<[[ x ]][[ yield content ]]>[[ end ]][[ yield b(x=1) content ]]c[[ end ]] [[ range _, v := data.list ]][[ v + \"!\" ]][[ end ]] [[ range i := ints(0, 3) ]][[ i ]][[ end ]] [[ repeat(\"ab\", 2) ]] [[ replace(\"aXa\", \"a\", \"b\", -1) ]]") }}`)
			Expect(err).ToNot(HaveOccurred())
			Expect(v).To(Equal("<0><1c> a!b! 012 abab bXb"), "a declared block renders where it is declared, then once per yield")
		})
	})

	Context("unbounded output and memory (finding 6)", func() {
		It("bounds Jet's repeat with a huge count before allocating", func() {
			expandFails(`{{ jet("[[ repeat(\"x\", 1000000000000) ]]") }}`, templates.ErrLimit, "values limit")
		})
		It("bounds a loop over ints(0, 1e12) by steps", func() {
			expandFails(`{{ jet("[[ range i := ints(0, 1000000000000) ]][[ end ]]") }}`, templates.ErrLimit, "steps limit")
		})
		It("bounds a string doubled in a loop (+ is charged)", func() {
			expandFails(`{{ jet("[[ s := \"xx\" ]][[ range i := ints(0, 60) ]][[ s = s + s ]][[ end ]][[ len(s) ]]") }}`, templates.ErrLimit, "values limit")
		})
		It("bounds a string doubled by reduce in an expression, which expr's memory budget does not count", func() {
			expandFails(`{{ len(reduce(1..40, #acc + #acc, "xx")) }}`, templates.ErrLimit, "values limit")
			expandFails(`{{ len(reduce(1..40, join([#acc, #acc]), "xx")) }}`, templates.ErrLimit, "values limit")
		})
		It("bounds replace that grows its input", func() {
			expandFails(`{{ jet("[[ replace(repeat(\"x\", 1000000), \"\", repeat(\"y\", 1000), -1) ]]") }}`, templates.ErrLimit, "values limit")
		})
		It("bounds what a render writes", func() {
			expandFails(`{{ jet("[[ range i := ints(0, 900000) ]]0123456789012345678901234567890123456789[[ end ]]") }}`, templates.ErrLimit, "output limit")
		})
		It("ends a render that runs past the time limit", func() {
			DeferCleanup(templates.SetRenderTime(50 * time.Millisecond))
			expandFails(`{{ jet("[[ range i := ints(0, 999000) ]][[ x := repeat(\"ab\", 3) + \"c\" ]][[ end ]]") }}`, templates.ErrLimit, "ran longer than 50ms (time limit)")
		})
		It("charges template(), jet() and file() calls in an expression's loop, so the time limit ends them", func() {
			write("x.templ", "x")
			DeferCleanup(templates.SetRenderTime(50 * time.Millisecond))
			expandFails(`{{ len(map(1..1000, map(1..1000, template("x.templ")))) }}`, templates.ErrLimit, "(time limit)")
			expandFails(`{{ len(map(1..1000, map(1..1000, jet("x")))) }}`, templates.ErrLimit, "(time limit)")
			expandFails(`{{ len(map(1..1000, map(1..1000, file("x.templ")))) }}`, templates.ErrLimit, "(time limit)")
		})
		It("bounds nested ranges over data by steps", func() {
			big := make([]any, 2000)
			env = templates.New(nil, map[string]any{"big": big})
			expandFails(`{{ jet("[[ range data.big ]][[ range data.big ]][[ end ]][[ end ]]") }}`, templates.ErrLimit, "steps limit")
		})
		It("bounds a resources_jet_file-style render through RenderJetTo, keeping the writer's own error", func() {
			var buf bytes.Buffer
			err := env.RenderJetTo(&buf, "x.jet", `[[ range i := ints(0, 1000000000000) ]]x[[ end ]]`, "[[", "]]")
			Expect(errors.Is(err, templates.ErrLimit)).To(BeTrue(), "%v", err)
			Expect(buf.Len()).To(BeNumerically("<=", templates.MaxRenderOutput))
		})
	})

	Context("Go templates (scaffolds, finding 2 and 6)", func() {
		render := func(body string) (string, error) {
			var buf bytes.Buffer
			err := templates.SandboxGo(&buf, templates.NewBudget(), templates.GoRender{Body: body, Data: map[string]any{"l": []any{1, 2}}})
			return buf.String(), err
		}
		It("refuses env, expandenv and getHostByName: no environment, no DNS", func() {
			GinkgoT().Setenv("CCM_SANDBOX_CANARY", "canary-env-39f2")
			for _, body := range []string{`{{ env "CCM_SANDBOX_CANARY" }}`, `{{ expandenv "$CCM_SANDBOX_CANARY" }}`, `{{ env "HOME" }}`, `{{ getHostByName "localhost" }}`} {
				out, err := render(body)
				Expect(errors.Is(err, templates.ErrSandbox)).To(BeTrue(), "%s: %v", body, err)
				Expect(err.Error()).To(ContainSubstring("is not allowed in the template sandbox"))
				Expect(out + err.Error()).ToNot(ContainSubstring("canary-env-39f2"))
				Expect(out + err.Error()).ToNot(ContainSubstring("127.0.0.1"))
			}
		})
		It("bounds Sprig's repeat, until, untilStep, seq and a range over a huge number", func() {
			for body, limit := range map[string]string{
				`{{ repeat 1000000000000 "x" }}`:                                          "values limit",
				`{{ range until 100000000000 }}{{ end }}`:                                 "values limit",
				`{{ range untilStep 0 100000000000 1 }}{{ end }}`:                         "values limit",
				`{{ range until 2000 }}{{ range until 2000 }}{{ end }}{{ end }}`:          "steps limit",
				`{{ seq 100000000000 }}`:                                                  "values limit",
				`{{ range $i := 100000000000 }}{{ end }}`:                                 "steps limit",
				`{{ $s := "xx" }}{{ range until 60 }}{{ $s = cat $s $s }}{{ end }}`:       "values limit",
				`{{ indent 100000000000 "x" }}`:                                           "values limit",
				`{{ range until 300 }}{{ range until 3000 }}0123456789{{ end }}{{ end }}`: "output limit",
			} {
				_, err := render(body)
				Expect(errors.Is(err, templates.ErrLimit)).To(BeTrue(), "%s: %v", body, err)
				Expect(err.Error()).To(ContainSubstring(limit), body)
			}
		})
		It("refuses templates that call themselves", func() {
			_, err := render(`{{ define "a" }}{{ template "a" }}{{ end }}{{ template "a" }}`)
			Expect(errors.Is(err, templates.ErrSandbox)).To(BeTrue(), "%v", err)
		})
		It("keeps Sprig and the builtins working", func() {
			out, err := render(`{{ range $i, $v := until 3 }}{{ $i }}{{ $v }}{{ end }} {{ seq 3 }} {{ join "," (list "a" "b") }} {{ nindent 2 "a" }} {{ printf "%03d" 7 }} {{ upper "x" }} {{ range .l }}{{ . }}{{ end }} {{ repeat 2 "ab" }}`)
			Expect(err).ToNot(HaveOccurred())
			Expect(out).To(Equal("001122 1 2 3 a,b \n  a 007 X 12 abab"))
		})
	})
})
