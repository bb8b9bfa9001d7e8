// Command ccm-orch drives a CCM Fleet: it finds hosts by their facts
// (discover), applies one resource (ensure) or a whole manifest (apply,
// audit) on all of them at once or in batches and prints one aggregated
// answer with a documented exit code. Requests and replies are kept in
// JetStream and can be read again (history). Requests are signed with a key
// made by "keys new" (--key). It can also run an embedded NATS broker, alone
// or in a cluster (broker).
package main

import (
	"context"
	"io"
	"os"

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

// runContext is run with a parent context, so tests can stop long-running
// commands (broker) the way a signal would.
func runContext(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	a := &app{Globals: program.Globals{Stdout: stdout, Stderr: stderr}, ctx: ctx}
	cli, _ := a.newCLI()
	return program.Run(cli, args, stderr)
}

// newCLI builds the command line with every command and its examples; the
// error names commands without examples (a test holds it to nil).
func (a *app) newCLI() (*fisk.Application, error) {
	cli := program.New("ccm-orch", "CCM Fleet orchestrator: find hosts by their facts and apply resources on them over NATS.", program.Build{Version: version, Commit: commit, Date: date}, &a.Globals)
	a.registerBroker(cli)
	a.registerDiscover(cli)
	a.registerEnsure(cli)
	a.registerApply(cli)
	a.registerAssign(cli)
	a.registerStatus(cli)
	a.registerHistory(cli)
	a.registerBench(cli)
	a.registerKeys(cli)
	a.registerPolicy(cli)
	a.registerUI(cli)
	return cli, program.AttachExamples(cli, examples)
}
