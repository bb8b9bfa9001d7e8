package program

import (
	"fmt"
	"runtime"

	"github.com/choria-io/fisk"
)

// Build is what the build stamped into a command with -ldflags -X
// (main.version, main.commit, main.date; see the Makefile's LDFLAGS).
type Build struct {
	Version string
	Commit  string
	Date    string
}

// String renders the build as --version and the version command print it:
// the version, the commit, the build date and the Go version, one per line.
func (b Build) String() string {
	return fmt.Sprintf("version: %s\ncommit: %s\nbuilt: %s\ngo: %s",
		orUnknown(b.Version), orUnknown(b.Commit), orUnknown(b.Date), runtime.Version())
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// registerVersion adds the version command, which prints what --version
// prints.
func registerVersion(app *fisk.Application, b Build, g *Globals) {
	app.Command("version", "Show the version, commit, build date and Go version").Action(func(*fisk.ParseContext) error {
		_, err := fmt.Fprintln(g.Stdout, b.String())
		return err
	})
}
