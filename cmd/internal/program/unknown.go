package program

import (
	"fmt"
	"slices"
	"strings"

	"github.com/choria-io/fisk"

	"github.com/ccm-fleet/ccm/resources/catalog"
)

// typeCommands are the commands whose subcommands are, besides a few
// commands of their own, the resource types of the catalog.
var typeCommands = []string{"ensure"}

// unknownSubcommand explains a command line that names a subcommand that
// does not exist (`ensure servce nginx`): what was not found, the nearest
// valid name when one is close, and all the valid ones. It returns "" when
// args name no unknown subcommand.
func unknownSubcommand(app *fisk.Application, args []string) string {
	model := app.Model()
	cmds := model.Commands
	flags := model.Flags
	parent := ""
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return ""
		}
		if strings.HasPrefix(a, "-") {
			if takesValue(flags, model.Commands, a) && !strings.Contains(a, "=") {
				i++
			}
			continue
		}
		visible := visibleNames(cmds)
		if len(visible) == 0 {
			return ""
		}
		next := findCommand(cmds, a)
		if next == nil {
			return unknownMessage(parent, a, visible)
		}
		parent = next.Name
		cmds = next.Commands
		flags = append(slices.Clone(flags), next.Flags...)
	}
	return ""
}

// unknownFlag explains a command line that gives a long flag that the
// command does not have but that is near one it has (`--wher`): the flag
// and the nearest one. It returns "" when args give no such flag.
func unknownFlag(app *fisk.Application, args []string) string {
	model := app.Model()
	cmds := model.Commands
	flags := model.Flags
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return ""
		}
		if !strings.HasPrefix(a, "-") {
			if next := findCommand(cmds, a); next != nil {
				cmds = next.Commands
				flags = append(slices.Clone(flags), next.Flags...)
			}
			continue
		}
		name, _, inline := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "--") {
			if f := findFlag(flags, a[1:min(2, len(a))]); f != nil && !f.IsBoolFlag() && len(a) == 2 {
				i++
			}
			continue
		}
		f := findFlag(flags, name)
		if f == nil {
			var names []string
			for _, f := range flags {
				if !f.Hidden {
					names = append(names, f.Name)
				}
			}
			if near := nearest(name, names); near != "" {
				return fmt.Sprintf("unknown flag --%s; did you mean --%s?", name, near)
			}
			return ""
		}
		if !f.IsBoolFlag() && !inline {
			i++
		}
	}
	return ""
}

// unknownMessage says that name is not a subcommand of parent, whose
// subcommands are visible: the nearest one, then the valid ones (resource
// types first under a command that takes them).
func unknownMessage(parent, name string, visible []string) string {
	noun, valid, other := "command", visible, []string(nil)
	if slices.Contains(typeCommands, parent) {
		noun, valid, other = "resource type", nil, nil
		for _, v := range visible {
			if _, ok := catalog.Lookup(v); ok {
				valid = append(valid, v)
			} else {
				other = append(other, v)
			}
		}
	}
	msg := fmt.Sprintf("unknown %s %q", noun, name)
	if near := nearest(name, visible); near != "" {
		msg += fmt.Sprintf("; did you mean %q?", near)
	}
	if !strings.HasSuffix(msg, "?") {
		msg += ";"
	}
	msg += " valid: " + strings.Join(valid, ", ")
	if len(other) > 0 {
		msg += fmt.Sprintf(" (%s also takes: %s)", parent, strings.Join(other, ", "))
	}
	return msg
}

// takesValue reports whether the flag written as arg (`--server`, `-v`)
// takes a value: as a flag of the commands so far (flags), else as a flag
// of any command (a command's flag written before the command); a flag
// no command has is taken to have none.
func takesValue(flags []*fisk.FlagModel, all []*fisk.CmdModel, arg string) bool {
	name := strings.TrimLeft(arg, "-")
	if f := findFlag(flags, name); f != nil {
		return !f.IsBoolFlag()
	}
	var walk func([]*fisk.CmdModel) *fisk.FlagModel
	walk = func(cmds []*fisk.CmdModel) *fisk.FlagModel {
		for _, c := range cmds {
			if f := findFlag(c.Flags, name); f != nil {
				return f
			}
			if f := walk(c.Commands); f != nil {
				return f
			}
		}
		return nil
	}
	f := walk(all)
	return f != nil && !f.IsBoolFlag()
}

// findFlag returns the flag called name (long, short or negated), or nil.
func findFlag(flags []*fisk.FlagModel, name string) *fisk.FlagModel {
	for _, f := range flags {
		if f.Name == name || (len(name) == 1 && f.Short == rune(name[0])) || "no-"+f.Name == name {
			return f
		}
	}
	return nil
}

// findCommand returns the command called name (or by an alias), or nil.
func findCommand(cmds []*fisk.CmdModel, name string) *fisk.CmdModel {
	for _, c := range cmds {
		if c.Name == name || slices.Contains(c.Aliases, name) {
			return c
		}
	}
	return nil
}

// visibleNames returns the names of the commands a person may use, sorted.
func visibleNames(cmds []*fisk.CmdModel) []string {
	var out []string
	for _, c := range cmds {
		if !c.Hidden && c.Name != "help" {
			out = append(out, c.Name)
		}
	}
	slices.Sort(out)
	return out
}

// nearest returns the name closest to s by edit distance when it is close
// enough to be a typo (at most 2 edits, and fewer than half of s), else "".
func nearest(s string, names []string) string {
	best, bestD := "", 3
	for _, n := range names {
		if d := editDistance(s, n); d < bestD && d*2 < len(s) {
			best, bestD = n, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
