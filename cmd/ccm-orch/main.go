// Command ccm-orch drives a CCM Fleet: it finds hosts by their facts
// (discover), applies one resource (ensure) or a whole manifest (apply,
// audit) on all of them at once or in batches and prints one aggregated
// answer with a documented exit code. Requests and replies are kept in
// JetStream and can be read again (history). Requests are signed with a key
// made by "keys new" (--key). It is a client: "broker" and "bench" run the
// binaries ccm-broker and ccm-bench (beside it, else on PATH), so that
// ccm-orch links neither the NATS server nor the agent and its providers.
package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/choria-io/fisk"

	"github.com/ccm-fleet/ccm/cmd/internal/connflags"
	"github.com/ccm-fleet/ccm/cmd/internal/program"
	"github.com/ccm-fleet/ccm/protocol"
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
	// execve replaces the process with a forwarded command's binary;
	// nil is syscall.Exec (tests record the call instead).
	execve func(path string, argv, env []string) error
	// self finds the running executable; nil is os.Executable.
	self func() (string, error)
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
	return a.run(args)
}

// run parses and runs args; a forwarded command (broker, bench) runs its
// binary with the arguments as given, before ccm-orch parses any of them.
func (a *app) run(args []string) int {
	if global, f, rest, ok := splitForwarded(args); ok {
		// forward returns only when the binary could not be run.
		err := a.forward(f, global, rest)
		fmt.Fprintf(a.Stderr, "ccm-orch: %v\n", err)
		return int(protocol.ExitError)
	}
	cli, _ := a.newCLI()
	return program.Run(cli, program.HoistFlags(cli, args, connflags.Names), a.Stderr)
}

// exitCodesHelp lists the exit codes in --help (see protocol.ExitCode).
const exitCodesHelp = `Exit codes (when several hold: 1, 2, 3, 5, 0):
  0    every expected host replied and nothing failed (noop: nothing would change)
  1    usage, connection or internal error
  2    at least one resource failed on at least one host
  3    at least one expected host did not reply (nothing failed)
  4    no host matched the filter
  5    noop only: something would change (drift), nothing failed, everyone replied
  130  interrupted (Ctrl-C) while waiting for replies: the hosts asked go on and
       record their results; the request id and "ccm-orch history show ID" are
       printed on stderr`

// newCLI builds the command line with every command and its examples; the
// error names commands without examples (a test holds it to nil).
func (a *app) newCLI() (*fisk.Application, error) {
	cli := program.New("ccm-orch", "CCM Fleet orchestrator: find hosts by their facts and apply resources on them over NATS.\n\n"+exitCodesHelp, program.Build{Version: version, Commit: commit, Date: date}, &a.Globals)
	a.registerForwarded(cli)
	a.registerDiscover(cli)
	a.registerFacts(cli)
	a.registerEnsure(cli)
	a.registerApply(cli)
	a.registerAssign(cli)
	a.registerManifest(cli)
	a.registerRegistration(cli)
	a.registerStatus(cli)
	a.registerHistory(cli)
	a.registerKeys(cli)
	a.registerPolicy(cli)
	a.registerUI(cli)
	return cli, program.AttachExamples(cli, examples)
}
