package execposix

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"strings"
	"syscall"

	"github.com/kballard/go-shellquote"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/providers/runner"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/exectype"
)

// Posix runs exec commands without a shell: the command line is split into
// words with shell-like quoting and the first word is the executable.
type Posix struct {
	base
}

// Shell runs exec commands as /bin/sh -c "<command line>".
type Shell struct {
	base
	shell string
}

var (
	_ exectype.Provider = (*Posix)(nil)
	_ exectype.Provider = (*Shell)(nil)
)

// Execute implements exectype.Provider: it splits command into words and
// runs the first with the rest as its arguments, no shell involved.
func (p *Posix) Execute(ctx context.Context, props *exectype.Properties, command string) (*exectype.Result, error) {
	words, err := shellquote.Split(command)
	if err != nil {
		return nil, fmt.Errorf("%s provider: %w", p.name, err)
	}
	if len(words) == 0 {
		return nil, fmt.Errorf("%s provider: %w", p.name, exectype.ErrNoCommand)
	}
	return p.run(ctx, props, words[0], words[1:])
}

// Execute implements exectype.Provider: it passes command, whole, to the
// shell as the argument of -c.
func (s *Shell) Execute(ctx context.Context, props *exectype.Properties, command string) (*exectype.Result, error) {
	if strings.TrimSpace(command) == "" {
		return nil, fmt.Errorf("%s provider: %w", s.name, exectype.ErrNoCommand)
	}
	return s.run(ctx, props, s.shell, []string{"-c", command})
}

// base is what both providers share: the runner, the logger and Status.
type base struct {
	name   string
	runner runner.Runner
	log    *slog.Logger
}

// Name implements resources.Provider.
func (b *base) Name() string { return b.name }

// Status implements exectype.Provider: an exec resource is always present;
// the state says whether its creates file exists.
func (b *base) Status(ctx context.Context, props *exectype.Properties) (*protocol.ExecState, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	st := &protocol.ExecState{
		CommonState: protocol.NewCommonState(protocol.TypeExec, props.Name, exectype.EnsurePresent),
		Metadata:    &protocol.ExecMetadata{Name: props.Name, Provider: b.name},
	}
	if props.Creates != "" {
		ok, err := exists(props.Creates)
		if err != nil {
			return nil, fmt.Errorf("%s provider: creates: %w", b.name, err)
		}
		st.CreatesSatisfied = ok
	}
	return st, nil
}

// run starts path with args under props' cwd, environment, search path and
// timeout, keeping at most exectype.MaxOutput bytes of each output stream.
func (b *base) run(ctx context.Context, props *exectype.Properties, path string, args []string) (*exectype.Result, error) {
	if b.runner == nil {
		return nil, fmt.Errorf("%s provider: %w", b.name, ErrNoRunner)
	}
	// The same fixed base on every host and from every caller: CCM's PATH
	// (or the resource's path), locale and working directory (or the
	// resource's cwd), then the resource's environment; never the agent's or
	// the caller's own environment or directory.
	searchPath := props.Path
	if searchPath == "" {
		searchPath = exectype.BasePath
	}
	dir := props.Cwd
	if dir == "" {
		dir = exectype.BaseDir
	}
	cmd := runner.Command{
		Path:       path,
		Args:       args,
		Dir:        dir,
		BaseEnv:    exectype.BaseEnvironment(),
		Env:        props.Environment,
		SearchPath: searchPath,
		Timeout:    props.TimeoutDuration(),
		MaxOutput:  exectype.MaxOutput,
	}
	resources.Logger(ctx, b.log).Debug("running command", "executable", path, "cwd", props.Cwd, "timeout", cmd.Timeout)
	res, err := b.runner.Run(ctx, cmd)
	var out *exectype.Result
	if res != nil {
		out = &exectype.Result{ExitCode: res.ExitCode, Stdout: res.Stdout, Stderr: res.Stderr, Truncated: res.Truncated}
	}
	if err != nil {
		return out, fmt.Errorf("%s provider: %w", b.name, err)
	}
	return out, nil
}

// exists reports whether path exists; a missing path, or one below a
// non-directory, does not.
func exists(path string) (bool, error) {
	_, err := os.Stat(path)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return false, nil
	default:
		return false, err
	}
}
