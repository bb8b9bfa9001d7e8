// Command ccm-bench is the benchmark harness of CCM Fleet: it runs an
// embedded broker, plain NATS responders (the floor) and simulated agents,
// times fleet runs through the orchestrator library and through the real
// ccm-orch binary, and prints a table (see package bench). It is a binary
// of its own so that ccm-orch, the operators' client, does not carry the
// broker, the agent and the providers; `ccm-orch bench` and `make bench`
// run it. It expects ccm-orch and ccm-agent beside it (make build puts the
// three in bin/).
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
	a := &app{Globals: program.Globals{Stdout: stdout, Stderr: stderr}, ctx: context.Background()}
	cli, _ := a.newCLI()
	return program.Run(cli, args, stderr)
}

// newCLI builds the command line with every command and its examples; the
// error names commands without examples (a test holds it to nil).
func (a *app) newCLI() (*fisk.Application, error) {
	cli := program.New("ccm-bench", "CCM Fleet benchmark: fleet runs against the raw NATS floor on an embedded broker with simulated agents (ccm-orch bench runs this).", program.Build{Version: version, Commit: commit, Date: date}, &a.Globals)
	a.registerRun(cli)
	return cli, program.AttachExamples(cli, examples)
}

// signalContext is the app's context, also ended by SIGINT and SIGTERM.
func (a *app) signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(a.ctx, syscall.SIGINT, syscall.SIGTERM)
}
