package scaffoldchoria_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ccm-fleet/ccm/providers/scaffoldchoria"
	"github.com/ccm-fleet/ccm/resources/scaffoldtype"
)

// FuzzScaffold renders any text as a scaffold's file and its partial, with
// either engine, under noop: it must never crash (a file or partial that
// render()s itself, recursive blocks or templates, huge repeats and loops),
// never read the environment, and never write the target.
func FuzzScaffold(f *testing.F) {
	for _, seed := range []struct {
		body string
		jet  bool
	}{
		{`x{{ render "a.txt" . }}`, false}, {`{{ render "_partials/p.txt" . }}`, false},
		{`x[[ render("a.txt", .) ]]`, true}, {`[[ render("_partials/p.txt", .) ]]`, true},
		{`[[ block r() ]][[ yield r() ]][[ end ]]`, true}, {`[[ include "a.txt" ]]`, true}, {`[[ exec("a.txt") ]]`, true},
		{`{{ define "a" }}{{ template "a" }}{{ end }}{{ template "a" }}`, false},
		{`{{ env "CCM_FUZZ_CANARY" }}`, false}, {`{{ expandenv "$CCM_FUZZ_CANARY" }}`, false},
		{`{{ range until 100000 }}{{ write "w.txt" (repeat 1000 "x") }}{{ end }}`, false},
		{`{{ repeat 1000000000000 "x" }}`, false}, {`[[ range i := ints(0, 1000000000000) ]]x[[ end ]]`, true},
		{`host={{ .facts.hostname }} {{ lookup "data.port" 80 }}`, false}, {`host=[[ facts.hostname ]]`, true},
	} {
		f.Add(seed.body, seed.jet)
	}
	f.Setenv("CCM_FUZZ_CANARY", "canary-fuzz-scaffold-a41f")
	prov := scaffoldchoria.New(nil)
	f.Fuzz(func(t *testing.T, body string, jet bool) {
		dir := t.TempDir()
		source, target := filepath.Join(dir, "src"), filepath.Join(dir, "target")
		if err := os.MkdirAll(filepath.Join(source, "_partials"), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"a.txt", "_partials/p.txt"} {
			if err := os.WriteFile(filepath.Join(source, name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		engine := scaffoldtype.EngineGo
		if jet {
			engine = scaffoldtype.EngineJet
		}
		props := &scaffoldtype.Properties{Source: source, Engine: engine}
		props.Name = target
		if err := props.Validate(); err != nil {
			t.Fatal(err)
		}
		_, err := prov.Scaffold(context.Background(), testEnv(), props, true)
		if err != nil && strings.Contains(err.Error(), "canary-fuzz-scaffold-a41f") && !strings.Contains(body, "a41f") {
			t.Fatalf("the environment leaked: %q", body)
		}
		if _, serr := os.Stat(target); serr == nil {
			t.Fatalf("a noop render made the target")
		}
	})
}
