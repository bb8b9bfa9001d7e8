package program

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/choria-io/fisk"
)

// Examples maps a full command ("ensure file", "history show") to its
// examples: comment lines starting with '#' and command lines, one per
// line.
type Examples map[string]string

// AttachExamples shows each command's examples at the end of its --help and
// makes one cheat per top-level command (`NAME cheat ensure`) holding the
// examples of that command and of its subcommands, in the cheat tool's
// format (`NAME cheat --save DIR`).
//
// It returns an error naming every visible command that has no examples
// and every example for a command that does not exist, so a test can hold
// the programs to examples on every command.
func AttachExamples(app *fisk.Application, ex Examples) error {
	if app.CheatCommand == nil {
		app.WithCheats(app.Name)
	}
	var errs []error
	attached := map[string]bool{}
	cheats := map[string]*strings.Builder{}
	var order []string
	var walk func(models []*fisk.CmdModel, lookup func(string) *fisk.CmdClause)
	walk = func(models []*fisk.CmdModel, lookup func(string) *fisk.CmdClause) {
		for _, m := range models {
			cmd := lookup(m.Name)
			if m.Hidden || cmd == nil || m.Name == "help" {
				continue
			}
			full := cmd.FullCommand()
			subs := m.Commands
			if text, ok := ex[full]; ok {
				attached[full] = true
				cmd.HelpLong(helpText(m.HelpLong, text))
				top := strings.Fields(full)[0]
				b := cheats[top]
				if b == nil {
					b = &strings.Builder{}
					cheats[top] = b
					order = append(order, top)
				}
				if b.Len() > 0 {
					b.WriteString("\n")
				}
				b.WriteString(strings.TrimSpace(text))
				b.WriteString("\n")
			} else if len(subs) == 0 {
				errs = append(errs, fmt.Errorf("command %q has no examples", full))
			}
			walk(subs, cmd.GetCommand)
		}
	}
	walk(app.Model().Commands, app.GetCommand)
	for _, full := range slices.Sorted(maps.Keys(ex)) {
		if !attached[full] {
			errs = append(errs, fmt.Errorf("examples for %q, which is not a command", full))
		}
	}
	for _, top := range order {
		app.Cheat(top, strings.TrimRight(cheats[top].String(), "\n"))
	}
	return errors.Join(errs...)
}

// helpText is a command's long help followed by its examples, indented so
// the help printer keeps them as they are written.
func helpText(long, examples string) string {
	var b strings.Builder
	if long != "" {
		b.WriteString(long)
		b.WriteString("\n\n")
	}
	b.WriteString("Examples:\n\n")
	for _, line := range strings.Split(strings.TrimSpace(examples), "\n") {
		if line = strings.TrimSpace(line); line == "" {
			b.WriteString("\n")
			continue
		}
		b.WriteString("    ")
		b.WriteString(line)
		b.WriteString("\n")
	}
	return b.String()
}

// ExampleCommands returns the command lines of ex, without comments and
// blank lines, sorted, for tests that parse every example.
func ExampleCommands(ex Examples) []string {
	var out []string
	for _, text := range ex {
		for _, line := range strings.Split(text, "\n") {
			line = strings.TrimSpace(line)
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			out = append(out, line)
		}
	}
	slices.Sort(out)
	return out
}
