// Package program holds what ccm-agent and ccm-orch share as programs: building
// the fisk application with the global flags, running a command line to an
// exit status (the documented exit codes), and the loggers on stderr.
package program

import (
	"errors"
	"fmt"
	"io"

	"github.com/choria-io/fisk"

	"github.com/ccm-fleet/ccm/protocol"
)

// ExitError carries an exit status out of a command action.
type ExitError struct {
	Code protocol.ExitCode
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// Exit ends the command with code; a nil err prints nothing more.
func Exit(code protocol.ExitCode, err error) error { return &ExitError{Code: code, Err: err} }

// Globals are the flags every command takes.
type Globals struct {
	Stdout, Stderr io.Writer
	Verbose, Debug bool
	// LogFormat and LogLevel are --log-format and --log-level; empty when
	// not given.
	LogFormat, LogLevel string
}

// New builds the application with --version, the version command, help
// and the global flags.
func New(name, help string, build Build, g *Globals) *fisk.Application {
	app := fisk.New(name, help)
	app.Version(build.String())
	app.Writer(g.Stdout)
	app.ErrorWriter(g.Stderr)
	app.UsageWriter(g.Stdout)
	app.HelpFlag.Short('h')
	app.Flag("verbose", "Log progress to stderr (ccm-orch: and list every group of hosts in text reports)").Short('v').BoolVar(&g.Verbose)
	app.Flag("debug", "Log debugging detail to stderr").BoolVar(&g.Debug)
	app.Flag("log-format", "Log lines as text (key=value) or json (one object a line)").Envar("CCM_LOG_FORMAT").PlaceHolder("text|json").EnumVar(&g.LogFormat, LogFormats...)
	app.Flag("log-level", "Log at this level and above: debug, info, warn or error").Envar("CCM_LOG_LEVEL").PlaceHolder("LEVEL").EnumVar(&g.LogLevel, LogLevels...)
	registerVersion(app, build, g)
	registerDocs(app, build, g)
	return app
}

// terminated is how the parser's own exits (after --help, --version)
// unwind to Run without ending the process, so tests can run commands
// in-process.
type terminated struct{ code int }

// Run parses and runs args and returns the exit status: an ExitError's
// code (printing its error, if any, as one line), or 1 for any other error.
func Run(app *fisk.Application, args []string, stderr io.Writer) (code int) {
	defer reportPeakRSS()
	defer func() {
		if r := recover(); r != nil {
			t, ok := r.(terminated)
			if !ok {
				panic(r)
			}
			code = t.code
		}
	}()
	app.Terminate(func(code int) { panic(terminated{code}) })
	args = joinSignedValues(app, args)
	_, err := app.Parse(args)
	if err == nil {
		return 0
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		if ee.Err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", app.Name, ee.Err)
		}
		return int(ee.Code)
	}
	if msg := unknownSubcommand(app, args); msg != "" {
		fmt.Fprintf(stderr, "%s: error: %s\n", app.Name, msg)
		return int(protocol.ExitError)
	}
	if msg := unknownFlag(app, args); msg != "" {
		fmt.Fprintf(stderr, "%s: error: %s (see %s --help)\n", app.Name, msg, app.Name)
		return int(protocol.ExitError)
	}
	fmt.Fprintf(stderr, "%s: error: %v (see %s --help)\n", app.Name, err, app.Name)
	return int(protocol.ExitError)
}
