package catalog

import (
	"slices"
	"strings"
)

// Positional is CCM's positional form of a type's command line: in
// `ensure TYPE NAME ARG`, ARG may set a property instead of the ensure
// value (`ensure archive NAME URL`, `ensure scaffold NAME SOURCE
// [ENSURE]`).
type Positional struct {
	// Property is the property ARG sets when Sets reports it does.
	Property string
	// Help is how the command's help describes ARG's second meaning.
	Help string
	// EnsureAfter reports whether an ensure value may follow ARG as a
	// third argument.
	EnsureAfter bool
	// sets reports whether arg is the property rather than an ensure
	// value.
	sets func(arg string) bool
}

// Sets reports whether arg, the second argument, is p.Property rather
// than an ensure value. An empty arg never is.
func (p *Positional) Sets(arg string) bool {
	return p != nil && arg != "" && p.sets(arg)
}

// isURL reports whether an archive's second argument is its URL.
func isURL(arg string) bool { return strings.Contains(arg, "://") }

// notPresence reports whether a scaffold's second argument is its source:
// anything but its ensure values.
func notPresence(arg string) bool { return arg != "present" && arg != "absent" }

// PositionalOf returns the CCM positional argument of the type called
// name, nil when its second argument is only the ensure value (or the
// catalog has no such type).
func PositionalOf(name string) *Positional {
	e, _ := Lookup(name)
	return e.Positional
}

// NeedsShell reports whether a resource of the type called name with
// provider (as written; "" when it names none) runs through a shell: a
// type with shell providers, and a named provider other than its
// shell-free ones. A signer needs shell: true for it, and such a provider
// is never chosen unless named.
func NeedsShell(name, provider string) bool {
	e, _ := Lookup(name)
	return len(e.ShellFree) > 0 && provider != "" && !slices.Contains(e.ShellFree, provider)
}

// ShellTypes returns the names of the types that have shell providers,
// sorted.
func ShellTypes() []string {
	var out []string
	for _, e := range entries {
		if len(e.ShellFree) > 0 {
			out = append(out, e.Name)
		}
	}
	return out
}
