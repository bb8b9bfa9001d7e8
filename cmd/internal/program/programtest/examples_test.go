package programtest_test

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/choria-io/fisk"

	"github.com/ccm-fleet/ccm/cmd/internal/program"
	"github.com/ccm-fleet/ccm/cmd/internal/program/programtest"
)

func TestAttachExamplesNamesWhatIsMissing(t *testing.T) {
	app := fisk.New("prog", "")
	app.Command("one", "")
	two := app.Command("two", "")
	two.Command("sub", "")
	two.Command("other", "")
	err := program.AttachExamples(app, program.Examples{
		"one":     "prog one",
		"two sub": "prog two sub",
		"three":   "prog three",
		"cheat":   "prog cheat --list",
	})
	if err == nil {
		t.Fatal("no error for a command without examples")
	}
	want := "command \"two other\" has no examples\nexamples for \"three\", which is not a command"
	if err.Error() != want {
		t.Fatalf("error:\n%s\nwant:\n%s", err, want)
	}
	var out bytes.Buffer
	app.UsageWriter(&out)
	app.Terminate(func(int) {})
	if _, err := app.Parse([]string{"cheat", "two"}); err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(out.String()) != "prog two sub" {
		t.Fatalf("cheat two: %q", out.String())
	}
}

func TestExampleCommandsSplitLikeAShell(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal("bash is needed to check examples")
	}
	dir := t.TempDir()
	for _, line := range []string{`prog a 'b>=1' "c d"`} {
		words, err := programtest.ShellWords(bash, dir, line)
		if err != nil || strings.Join(words, "|") != "prog|a|b>=1|c d" {
			t.Fatalf("%s: %q %v", line, words, err)
		}
	}
	for _, line := range []string{`prog a b>=1`, `prog a | tee x`, `prog $HOME`, "prog `id`", `prog a*`} {
		if err := os.WriteFile(dir+"/a-file", nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := programtest.ShellWords(bash, dir, line); err == nil {
			t.Errorf("%s: a shell reads it differently, and that was not reported", line)
		}
	}
}
