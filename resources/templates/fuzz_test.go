package templates_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ccm-fleet/ccm/resources/templates"
)

// fuzzEnv is an Env over a directory holding templates that call
// themselves (self.templ, self.jet) and each other (a.jet, b.jet).
func fuzzEnv(f *testing.F) *templates.Env {
	dir := f.TempDir()
	for name, body := range map[string]string{
		"self.templ": `{{ template("self.templ") }}`,
		"self.jet":   `[[ template("self.jet") ]]`,
		"a.jet":      `[[ template("b.jet") ]]`,
		"b.jet":      `[[ jet("a.jet") ]]`,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			f.Fatal(err)
		}
	}
	return templates.New(map[string]any{"host": "web1", "list": []any{"a", "b"}}, map[string]any{"n": 3}, templates.WithFiles(dir))
}

// sandboxed checks what every render in the sandbox promises: an error
// that passes a limit names it and wraps ErrLimit, and no more is written
// than the output limit.
func sandboxed(t *testing.T, out int, err error) {
	if out > templates.MaxRenderOutput {
		t.Fatalf("wrote %d bytes, more than the output limit", out)
	}
	if err != nil && strings.Contains(err.Error(), "template sandbox limit exceeded") && !errors.Is(err, templates.ErrLimit) {
		t.Fatalf("a limit error that does not wrap ErrLimit: %v", err)
	}
}

// FuzzRenderJet renders any text as a Jet template through jet(): it
// must never crash the process (the blocks of issue 39 finding 1 that
// yield themselves, include/exec of itself, templates that template
// themselves), and huge repeats and loops end at a limit (finding 6).
func FuzzRenderJet(f *testing.F) {
	for _, seed := range []string{
		`[[ block r() ]][[ yield r() ]][[ end ]]`,
		`[[ block a() ]][[ yield b() ]][[ end ]][[ block b() ]][[ yield a() ]][[ end ]]`,
		`[[ include "template" ]]`, `[[ exec("template") ]]`, `[[ import "template" ]]`, `[[ extends "template" ]]`,
		`[[ template("self.templ") ]]`, `[[ template("self.jet") ]]`, `[[ template("a.jet") ]]`,
		`[[ repeat("x", 1000000000000) ]]`, `[[ range i := ints(0, 1000000000000) ]]x[[ end ]]`,
		`[[ s := "xx" ]][[ range i := ints(0, 60) ]][[ s = s + s ]][[ end ]]`,
		`[[ try ]][[ range i := ints(0, 100000) ]]xxxxxxxx[[ end ]][[ end ]]`,
		`[[ range _, v := facts.list ]][[ v ]][[ end ]] [[ lookup("facts.host") ]] [[ data.n + 1 ]]`,
		`[[ ` + strings.Repeat("(", 5000) + `1` + strings.Repeat(")", 5000) + ` ]]`,
	} {
		f.Add(seed)
	}
	env := fuzzEnv(f)
	f.Fuzz(func(t *testing.T, body string) {
		var buf bytes.Buffer
		err := env.RenderJetTo(&buf, "fuzz", body, "[[", "]]")
		sandboxed(t, buf.Len(), err)
	})
}

// FuzzExpand expands any text as {{ }} / ${ } templates, whose
// expressions may call jet() and template(): it must never crash.
func FuzzExpand(f *testing.F) {
	for _, seed := range []string{
		`{{ jet("[[ block r() ]][[ yield r() ]][[ end ]]") }}`,
		`{{ jet("[[ include \"template\" ]]") }}`, `{{ jet("[[ exec(\"template\") ]]") }}`,
		`{{ template("self.templ") }}`, `${ template("self.jet") }`, `{{ jet("a.jet") }}`,
		`{{ template("{{ template(\"{{ 1 }}\") }}") }}`,
		`{{ jet("[[ repeat(\"x\", 1000000000000) ]]") }}`,
		`{{ jet("[[ range i := ints(0, 1000000000000) ]]x[[ end ]]") }}`,
		`{{ repeat("x", 1000000000) }}`, `{{ map(1..1000000000, #) }}`,
		`{{ ` + strings.Repeat("(", 5000) + `1` + strings.Repeat(")", 5000) + ` }}`,
		`host={{ lookup('facts.host') }} n=${ data.n * 2 }`,
	} {
		f.Add(seed)
	}
	env := fuzzEnv(f)
	f.Fuzz(func(t *testing.T, s string) {
		v, err := env.Expand(s)
		out := 0
		if str, ok := v.(string); ok {
			out = len(str) - len(s)
		}
		sandboxed(t, out, err)
	})
}

// FuzzSandboxGo renders any text as a Go template the way scaffolds do:
// it must never crash, and never read the environment (finding 2).
func FuzzSandboxGo(f *testing.F) {
	for _, seed := range []string{
		`{{ env "CCM_FUZZ_CANARY" }}`, `{{ expandenv "$CCM_FUZZ_CANARY" }}`, `{{ getHostByName "localhost" }}`,
		`{{ define "a" }}{{ template "a" }}{{ end }}{{ template "a" }}`,
		`{{ define "a" }}{{ template "b" }}{{ end }}{{ define "b" }}{{ template "a" }}{{ end }}{{ template "a" }}`,
		`{{ repeat 1000000000000 "x" }}`, `{{ range until 100000000000 }}x{{ end }}`, `{{ seq 100000000000 }}`,
		`{{ range $i := 100000000000 }}{{ end }}`, `{{ untilStep 0 100000000000 1 }}`,
		`{{ indent 100000000000 "x" }}`, `{{ randAlpha 100000000000 }}`, `{{ chunk 0 (list 1 2) }}`,
		`{{ $s := "xx" }}{{ range until 60 }}{{ $s = cat $s $s }}{{ end }}`,
		`{{ printf "%0999999d" 1 }}`, `{{ range .l }}{{ . }}{{ end }} {{ upper .h }}`,
	} {
		f.Add(seed)
	}
	f.Setenv("CCM_FUZZ_CANARY", "canary-fuzz-0d4e")
	f.Fuzz(func(t *testing.T, body string) {
		var buf bytes.Buffer
		err := templates.SandboxGo(&buf, templates.NewBudget(), templates.GoRender{Body: body, Data: map[string]any{"l": []any{1, 2}, "h": "web1"}})
		sandboxed(t, buf.Len(), err)
		if !strings.Contains(body, "0d4e") && (strings.Contains(buf.String(), "canary-fuzz-0d4e") || (err != nil && strings.Contains(err.Error(), "canary-fuzz-0d4e"))) {
			t.Fatalf("the environment leaked: %q", body)
		}
	})
}
