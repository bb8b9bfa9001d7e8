package exectype

import (
	"context"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources"
)

// MaxOutput bounds the bytes of stdout, and of stderr, a provider keeps from
// one run, and the combined output kept in the state.
const MaxOutput = 64 << 10

// Provider runs exec resources on a platform. Providers decide how a command
// line becomes a process; the type decides whether to run it.
type Provider interface {
	resources.Provider

	// Execute runs command, which is props.CommandLine() or one of props'
	// guards (onlyif, unless), with props' cwd, environment, path and
	// timeout; the whole process group is killed when the timeout passes.
	// A non-zero exit is a Result, not an error. The error reports a command
	// that could not run to an exit status (empty, not found, timed out, ctx
	// done); the Result is then partial, or nil when nothing started.
	Execute(ctx context.Context, props *Properties, command string) (*Result, error)
	// Status returns the resource's state: ensure present, and whether the
	// creates file exists. It returns an error when that cannot be told or
	// ctx is done.
	Status(ctx context.Context, props *Properties) (*protocol.ExecState, error)
}

// Result is what one run of a command produced.
type Result struct {
	// ExitCode is the exit status; 128+N when signal N killed the command.
	ExitCode int
	// Stdout holds at most MaxOutput bytes of standard output.
	Stdout []byte
	// Stderr holds at most MaxOutput bytes of standard error.
	Stderr []byte
	// Truncated is true when output beyond MaxOutput was discarded.
	Truncated bool
}
