// Command ccm-agent applies resources on the host it runs on: one resource
// at a time with "ensure", and (with the fleet) as a daemon taking requests
// over NATS.
package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/choria-io/fisk"

	"github.com/ccm-fleet/ccm/protocol"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "development"

// exitError carries an exit status out of a command action.
type exitError struct {
	code protocol.ExitCode
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// exitWith ends the command with code; a nil err prints nothing more.
func exitWith(code protocol.ExitCode, err error) error { return &exitError{code: code, err: err} }

type app struct {
	stdout  io.Writer
	stderr  io.Writer
	verbose bool
	debug   bool
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// terminated is how the parser's own exits (after --help, --version)
// unwind to run without ending a test process.
type terminated struct{ code int }

func run(args []string, stdout, stderr io.Writer) (code int) {
	defer func() {
		if r := recover(); r != nil {
			t, ok := r.(terminated)
			if !ok {
				panic(r)
			}
			code = t.code
		}
	}()
	a := &app{stdout: stdout, stderr: stderr}
	cli := fisk.New("ccm-agent", "CCM Fleet agent: applies resources (file, exec, package, service, archive, scaffold) on this host.")
	cli.Version(version)
	cli.Writer(stdout)
	cli.ErrorWriter(stderr)
	cli.UsageWriter(stdout)
	cli.HelpFlag.Short('h')
	cli.Flag("verbose", "Log progress to stderr").Short('v').BoolVar(&a.verbose)
	cli.Flag("debug", "Log debugging detail to stderr").BoolVar(&a.debug)
	cli.Terminate(func(code int) { panic(terminated{code}) })

	a.registerEnsure(cli)
	a.registerFacts(cli)
	a.registerRun(cli)
	a.registerSimulate(cli)

	_, err := cli.Parse(args)
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintf(stderr, "ccm-agent: %v\n", ee.err)
		}
		return int(ee.code)
	}
	fmt.Fprintf(stderr, "ccm-agent: error: %v (see ccm-agent --help)\n", err)
	return int(protocol.ExitError)
}

// daemonLogger logs to stderr at info level (debug with --debug), for the
// long-running commands.
func (a *app) daemonLogger() *slog.Logger {
	level := slog.LevelInfo
	if a.debug {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: level}))
}

// logger returns a logger writing to stderr at the level the flags ask for.
func (a *app) logger() *slog.Logger {
	switch {
	case a.debug:
		return slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	case a.verbose:
		return slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	default:
		return slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelError + 4}))
	}
}
