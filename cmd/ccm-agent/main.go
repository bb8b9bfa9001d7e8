// Command ccm-agent applies resources on the host it runs on: one resource
// at a time with "ensure", and as a daemon taking fleet requests over NATS
// with "run" ("simulate" runs many agents in one process).
package main

import (
	"io"
	"os"
	"time"

	"github.com/choria-io/fisk"

	"github.com/ccm-fleet/ccm/cmd/internal/connflags"
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
	// in is standard input ("ensure api pipe" reads its request there); nil
	// is os.Stdin.
	in io.Reader
	// packageLockTimeout is --package-lock-timeout of run, ensure and
	// apply; zero leaves it to the configuration file or the provider.
	packageLockTimeout time.Duration
}

// stdin returns the standard input the commands read.
func (a *app) stdin() io.Reader {
	if a.in == nil {
		return os.Stdin
	}
	return a.in
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes one command line and returns its exit status.
func run(args []string, stdout, stderr io.Writer) int {
	return runWithStdin(args, os.Stdin, stdout, stderr)
}

// runWithStdin is run reading standard input from stdin.
func runWithStdin(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	a := &app{Globals: program.Globals{Stdout: stdout, Stderr: stderr}, in: stdin}
	cli, _ := a.newCLI()
	return program.Run(cli, program.HoistFlags(cli, args, connflags.Names), stderr)
}

// newCLI builds the command line with every command and its examples; the
// error names commands without examples (a test holds it to nil).
func (a *app) newCLI() (*fisk.Application, error) {
	cli := program.New("ccm-agent", "CCM Fleet agent: applies resources (file, exec, package, service, archive, scaffold) on this host.", program.Build{Version: version, Commit: commit, Date: date}, &a.Globals)
	a.registerApply(cli)
	a.registerCCMAgent(cli)
	a.registerEnsure(cli)
	a.registerFacts(cli)
	a.registerHiera(cli)
	a.registerRegistration(cli)
	a.registerRun(cli)
	a.registerSimulate(cli)
	a.registerSession(cli)
	a.registerStatus(cli)
	return cli, program.AttachExamples(cli, examples)
}
