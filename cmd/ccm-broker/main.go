// Command ccm-broker runs the embedded NATS broker of a CCM Fleet: a NATS
// server with JetStream, alone or as one of a cluster, with TLS and an
// auth file, that sets up the history stream, the node registry and the
// assignment store by itself. It is a binary of its own so that ccm-orch,
// the operators' client, does not carry the NATS server; `ccm-orch broker`
// runs it.
package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/choria-io/fisk"

	"github.com/ccm-fleet/ccm/cmd/internal/program"
)

// version, commit and date are set at build time with -ldflags
// "-X main.version=... -X main.commit=... -X main.date=..." (Makefile LDFLAGS).
var (
	version = "development"
	commit  = ""
	date    = ""
)

type app struct {
	program.Globals
	ctx context.Context
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes one command line and returns its exit status.
func run(args []string, stdout, stderr io.Writer) int {
	return runContext(context.Background(), args, stdout, stderr)
}

// runContext is run with a parent context, so tests can stop the broker
// the way a signal would.
func runContext(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	a := &app{Globals: program.Globals{Stdout: stdout}, ctx: ctx}
	// With --log-format json every line on stderr is a JSON object, the
	// final error and the parser's messages included.
	a.Stderr = program.JSONLines(stderr, "ccm-broker", func() bool { return a.LogFormat == "json" })
	cli, _ := a.newCLI()
	return program.Run(cli, args, a.Stderr)
}

// newCLI builds the command line with every command and its examples; the
// error names commands without examples (a test holds it to nil).
func (a *app) newCLI() (*fisk.Application, error) {
	cli := program.New("ccm-broker", "CCM Fleet broker: an embedded NATS server with JetStream for the fleet, alone or in a cluster (ccm-orch broker runs this).", program.Build{Version: version, Commit: commit, Date: date}, &a.Globals)
	a.registerRun(cli)
	return cli, program.AttachExamples(cli, examples)
}

// signalContext is the app's context, also ended by SIGINT and SIGTERM.
func (a *app) signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(a.ctx, syscall.SIGINT, syscall.SIGTERM)
}
