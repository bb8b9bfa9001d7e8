package program

import (
	"slices"
	"strings"

	"github.com/choria-io/fisk"
)

// HoistFlags returns args with the flags named in names (long names; each
// takes a value), when written before the command, moved after it:
// `--context prod discover` becomes `discover --context prod`, as the
// nats CLI takes its connection flags anywhere. The moved flags go to
// the end of args, before a `--`. Flags of the application itself stay
// where they are; args without such a flag before the command are
// returned as they are.
func HoistFlags(app *fisk.Application, args []string, names []string) []string {
	model := app.Model()
	var moved, kept []string
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		if a == "--" || !strings.HasPrefix(a, "-") || a == "-" {
			break
		}
		name, _, inline := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "--") {
			name, inline = a[1:2], len(a) > 2
		}
		if f := findFlag(model.Flags, name); f != nil || !hoisted(model, names, name) {
			kept = append(kept, a)
			if f != nil && !f.IsBoolFlag() && !inline && i+1 < len(args) {
				i++
				kept = append(kept, args[i])
			}
			continue
		}
		moved = append(moved, a)
		if !inline && i+1 < len(args) {
			i++
			moved = append(moved, args[i])
		}
	}
	if len(moved) == 0 {
		return args
	}
	rest := args[i:]
	end := slices.Index(rest, "--")
	if end < 0 {
		end = len(rest)
	}
	out := append(kept, rest[:end]...)
	out = append(out, moved...)
	return append(out, rest[end:]...)
}

// hoisted says whether name (long, or a one-letter short) is one of
// names, or the short form of one of them on some command.
func hoisted(model *fisk.ApplicationModel, names []string, name string) bool {
	if len(name) != 1 {
		return slices.Contains(names, name)
	}
	found := false
	var walk func([]*fisk.CmdModel)
	walk = func(cmds []*fisk.CmdModel) {
		for _, c := range cmds {
			if f := findFlag(c.Flags, name); f != nil && slices.Contains(names, f.Name) {
				found = true
			}
			walk(c.Commands)
		}
	}
	walk(model.Commands)
	return found
}

// joinSignedValues returns args with a value that starts with a sign and
// a digit (`-1m`, `+30s`, `-5`) joined to the flag before it when that
// flag takes a value and was written without one: `--ttl -1m` becomes
// `--ttl=-1m`, so the value is not read as a short flag (no flag of
// these programs is a digit). The flag then judges the value itself.
func joinSignedValues(app *fisk.Application, args []string) []string {
	model := app.Model()
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		if i+1 < len(args) && signed(args[i+1]) && flagWantsValue(model, a) {
			sep := "="
			if !strings.HasPrefix(a, "--") {
				sep = ""
			}
			out = append(out, a+sep+args[i+1])
			i++
			continue
		}
		out = append(out, a)
	}
	return out
}

// signed says whether s is a number or duration with a sign: -1m, +2.5s.
func signed(s string) bool {
	return len(s) >= 2 && (s[0] == '-' || s[0] == '+') && (s[1] >= '0' && s[1] <= '9' || s[1] == '.')
}

// flagWantsValue says whether a is a flag written without its value
// (`--ttl`, `-W`) that takes one, on the application or any command.
func flagWantsValue(model *fisk.ApplicationModel, a string) bool {
	if !strings.HasPrefix(a, "-") || strings.Contains(a, "=") || a == "-" {
		return false
	}
	if !strings.HasPrefix(a, "--") && len(a) != 2 {
		return false
	}
	return takesValue(model.Flags, model.Commands, a)
}
