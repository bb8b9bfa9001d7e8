// Package programtest checks, for the programs' tests, what the program
// package promises about commands: that every command has examples and
// that every example is a command line that works as written.
package programtest

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/choria-io/fisk"
	"github.com/kballard/go-shellquote"

	"github.com/ccm-fleet/ccm/cmd/internal/program"
)

// ShellWords returns the words bash makes of line, run in dir, and an
// error when they are not the words line shows (quotes removed): an
// unquoted redirection, pipe, glob, variable or command substitution, or
// when running it created a file in dir.
func ShellWords(bash, dir, line string) ([]string, error) {
	want, err := shellquote.Split(line)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", line, err)
	}
	cmd := exec.Command(bash, "--norc", "--noprofile", "-c", "printf '%s\\0' "+line)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/nonexistent"}
	before, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out, runErr := cmd.Output()
	after, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	switch {
	case runErr != nil:
		return got, fmt.Errorf("%s: bash: %w", line, runErr)
	case len(after) != len(before):
		return got, fmt.Errorf("%s: a shell creates a file running it (an unquoted > or |?)", line)
	case !slices.Equal(got, want):
		return got, fmt.Errorf("%s: a shell reads it as %q, not %q (quote it)", line, got, want)
	}
	return got, nil
}

// CheckExamples fails t unless newCLI's application has examples for every
// command (its error is nil) and every example line starts with the
// program's name, reads the same to a shell as it looks, and is accepted
// by the program's own parser (flags, arguments, enum values). The examples
// are parsed in a temporary working directory holding an empty file for
// each of files (the manifests they name).
func CheckExamples(t *testing.T, newCLI func() (*fisk.Application, error), ex program.Examples, files ...string) {
	t.Helper()
	work := t.TempDir()
	for _, f := range files {
		if err := os.WriteFile(work+"/"+f, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(work)
	app, err := newCLI()
	if err != nil {
		t.Fatalf("examples:\n%v", err)
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal("bash is needed to check the examples")
	}
	dir := t.TempDir()
	lines := program.ExampleCommands(ex)
	if len(lines) == 0 {
		t.Fatal("no examples")
	}
	for _, line := range lines {
		words, err := ShellWords(bash, dir, line)
		if err != nil {
			t.Error(err)
			continue
		}
		if words[0] != app.Name {
			t.Errorf("%s: does not start with %s", line, app.Name)
			continue
		}
		// A fresh application per line: parsing sets the flags' values.
		fresh, _ := newCLI()
		var out bytes.Buffer
		fresh.UsageWriter(&out)
		fresh.ErrorWriter(&out)
		if err := parseOnly(fresh, words[1:]); err != nil {
			t.Errorf("%s: %v", line, err)
		}
	}
}

// parseOnly parses args and sets each flag's and argument's value (which
// checks durations, numbers and enum values) without running any action.
func parseOnly(app *fisk.Application, args []string) error {
	ctx, err := app.ParseContext(args)
	if err != nil {
		return err
	}
	if !ctx.EOL() {
		return fmt.Errorf("unexpected argument %q", ctx.Peek().Value)
	}
	for _, el := range ctx.Elements {
		if el.Value == nil {
			continue
		}
		var v fisk.Value
		name := ""
		switch c := el.Clause.(type) {
		case *fisk.FlagClause:
			v, name = c.Model().Value, "--"+c.Model().Name
		case *fisk.ArgClause:
			v, name = c.Model().Value, c.Model().Name
		}
		if v == nil {
			continue
		}
		if err := v.Set(*el.Value); err != nil {
			if missingHostFile(*el.Value) {
				continue // a file on the operator's host, such as /etc/ccm/agent.yaml
			}
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}

// missingHostFile reports whether v is an absolute path that does not exist
// here: an example may name a file of the operator's host, which a
// file-checking flag refuses on this one. (The flag's own error carries
// only text, so the path is checked again.)
func missingHostFile(v string) bool {
	if !filepath.IsAbs(v) {
		return false
	}
	_, err := os.Stat(v)
	return errors.Is(err, fs.ErrNotExist)
}
