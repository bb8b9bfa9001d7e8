package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// DefaultMaxOutput is how many bytes of stdout, and of stderr, are kept when
// a Command does not say.
const DefaultMaxOutput = 1 << 20

var (
	// ErrNotFound is returned when the executable cannot be found.
	ErrNotFound = errors.New("command not found")
	// ErrTimeout is returned when a command ran past its timeout and its
	// processes were killed.
	ErrTimeout = errors.New("command timed out")
)

// Command is one process to run.
type Command struct {
	// Path is the executable: an absolute path, or a name looked up in
	// SearchPath (or the runner's PATH when SearchPath is empty).
	Path string
	// Args are the arguments after the executable.
	Args []string
	// Dir is the working directory; empty means the runner's.
	Dir string
	// Env holds KEY=VALUE pairs added to (and overriding) the inherited
	// environment.
	Env []string
	// BaseEnv, when not nil, replaces the inherited environment: the
	// process starts from these KEY=VALUE pairs (then SearchPath and Env),
	// never from the runner's own environment.
	BaseEnv []string
	// SearchPath, when set, is the colon separated PATH used to find Path
	// and given to the process.
	SearchPath string
	// Timeout kills the command and every process it started after this
	// long; zero means no limit beyond ctx.
	Timeout time.Duration
	// MaxOutput bounds the bytes kept of stdout and of stderr each; zero
	// means DefaultMaxOutput.
	MaxOutput int
	// Stdin, when not nil, is written to the command's standard input
	// (a secret handed to a tool such as chpasswd, never in its argv);
	// nil gives it none. String and Argv never show it.
	Stdin []byte
}

// Argv returns the executable followed by its arguments.
func (c Command) Argv() []string { return append([]string{c.Path}, c.Args...) }

func (c Command) String() string { return strings.Join(c.Argv(), " ") }

// Result is what a finished command produced. A non-zero exit code is a
// result, not an error.
type Result struct {
	ExitCode  int
	Stdout    []byte
	Stderr    []byte
	Truncated bool
	Duration  time.Duration
}

// Runner runs commands. Run blocks until the command ends, its timeout
// passes or ctx is done; it returns an error only when the command could not
// be run to an exit status (not found, could not start, timed out, cancelled).
type Runner interface {
	Run(ctx context.Context, cmd Command) (*Result, error)
}

// Exec runs real processes, each in its own process group. With a
// Supervisor every process a command starts is killed when it ends, times
// out or ctx is done, setsid and double forks included (see the package
// documentation); without one, the same is done as far as /proc allows
// while this process is not a subreaper.
type Exec struct {
	// Supervisor contains the commands' processes; nil runs them without a
	// cgroup and without reaping orphans.
	Supervisor *Supervisor
}

var _ Runner = Exec{}

// waitDelay bounds how long output is read after a command and its
// processes were killed, in case a process that escaped holds the pipes.
const waitDelay = 2 * time.Second

// Run implements Runner.
func (e Exec) Run(ctx context.Context, c Command) (*Result, error) {
	path, err := lookPath(c.Path, c.SearchPath)
	if err != nil {
		return nil, err
	}
	if c.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	max := c.MaxOutput
	if max <= 0 {
		max = DefaultMaxOutput
	}
	stdout := &capped{max: max}
	stderr := &capped{max: max}

	sc := e.Supervisor.newScope()
	start := time.Now()
	cmd, pipes, err := startCommand(ctx, sc, path, c)
	if err != nil && sc.cg != nil && !errors.Is(err, fs.ErrNotExist) {
		e.Supervisor.warnOnce.Do(func() {
			sc.log.Warn("cannot start a command in its cgroup; following its processes through /proc", "error", err)
		})
		sc.dropCgroup()
		cmd, pipes, err = startCommand(ctx, sc, path, c)
	}
	if err != nil {
		sc.finish()
		return nil, fmt.Errorf("%s: %w", c.Path, err)
	}
	var readers sync.WaitGroup
	readers.Go(func() { _, _ = io.Copy(stdout, pipes[0]) })
	readers.Go(func() { _, _ = io.Copy(stderr, pipes[1]) })
	sc.started(cmd.Process.Pid)

	err = cmd.Wait()
	procs.unregister(cmd.Process.Pid)
	sc.finish()
	waitReaders(&readers, waitDelay, pipes[0], pipes[1])

	res := &Result{
		Stdout:    stdout.buf.Bytes(),
		Stderr:    stderr.buf.Bytes(),
		Truncated: stdout.truncated || stderr.truncated,
		Duration:  time.Since(start),
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		if errors.Is(ctxErr, context.DeadlineExceeded) && c.Timeout > 0 {
			return res, fmt.Errorf("%s: %w after %s", c.Path, ErrTimeout, c.Timeout)
		}
		return res, fmt.Errorf("%s: %w", c.Path, ctxErr)
	}
	var exitErr *exec.ExitError
	switch {
	case err == nil:
		return res, nil
	case errors.As(err, &exitErr):
		res.ExitCode = exitErr.ExitCode()
		if res.ExitCode < 0 { // killed by a signal
			res.ExitCode = 128 + int(exitErr.Sys().(syscall.WaitStatus).Signal())
		}
		return res, nil
	case errors.Is(err, exec.ErrWaitDelay):
		res.ExitCode = cmd.ProcessState.ExitCode()
		return res, nil
	default:
		return res, fmt.Errorf("%s: %w", c.Path, err)
	}
}

// startCommand starts c in scope sc with its stdout and stderr on pipes the
// caller reads (so that os/exec's Wait returns when the command exits, not
// when every holder of its output is gone) and registers the child so the
// orphan reaper leaves it to os/exec.
func startCommand(ctx context.Context, sc *execScope, path string, c Command) (*exec.Cmd, [2]*os.File, error) {
	var pipes [2]*os.File
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, pipes, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		_, _ = outR.Close(), outW.Close()
		return nil, pipes, err
	}
	cmd := exec.CommandContext(ctx, path, c.Args...)
	cmd.Dir = c.Dir
	if c.BaseEnv != nil {
		cmd.Env = append([]string(nil), c.BaseEnv...)
	} else {
		cmd.Env = os.Environ()
	}
	if c.SearchPath != "" {
		cmd.Env = append(cmd.Env, "PATH="+c.SearchPath)
	}
	cmd.Env = append(cmd.Env, c.Env...)
	cmd.Stdin = nil
	if c.Stdin != nil {
		cmd.Stdin = bytes.NewReader(c.Stdin)
	}
	cmd.Stdout = outW
	cmd.Stderr = errW
	sc.configure(cmd)
	cmd.Cancel = func() error {
		// Kill every process of the command, not only the direct child.
		sc.setDirect(cmd.Process.Pid)
		sc.kill()
		return nil
	}
	cmd.WaitDelay = waitDelay

	procs.start.RLock()
	err = cmd.Start()
	if err == nil {
		procs.register(cmd.Process.Pid)
	}
	procs.start.RUnlock()
	_, _ = outW.Close(), errW.Close()
	if err != nil {
		_, _ = outR.Close(), errR.Close()
		return nil, pipes, err
	}
	pipes[0], pipes[1] = outR, errR
	return cmd, pipes, nil
}

func lookPath(name, searchPath string) (string, error) {
	if name == "" {
		return "", fmt.Errorf("%w: empty command", ErrNotFound)
	}
	if strings.Contains(name, "/") {
		if _, err := os.Stat(name); err != nil {
			return "", fmt.Errorf("%w: %s", ErrNotFound, name)
		}
		return name, nil
	}
	if searchPath == "" {
		p, err := exec.LookPath(name)
		if err != nil {
			return "", fmt.Errorf("%w: %s is not in PATH", ErrNotFound, name)
		}
		return p, nil
	}
	for _, dir := range filepath.SplitList(searchPath) {
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: %s is not in %s", ErrNotFound, name, searchPath)
}

// capped keeps at most max bytes and discards the rest, noting that it did.
type capped struct {
	buf       bytes.Buffer
	max       int
	truncated bool
}

func (c *capped) Write(p []byte) (int, error) {
	room := c.max - c.buf.Len()
	if room <= 0 {
		c.truncated = c.truncated || len(p) > 0
		return len(p), nil
	}
	if len(p) > room {
		c.buf.Write(p[:room])
		c.truncated = true
		return len(p), nil
	}
	return c.buf.Write(p)
}

// Tail returns the end of what the command printed, stderr or else stdout,
// on one line and at most max bytes, for error messages.
func (r *Result) Tail(max int) string {
	out := strings.TrimSpace(string(r.Stderr))
	if out == "" {
		out = strings.TrimSpace(string(r.Stdout))
	}
	if out == "" {
		return "no output"
	}
	if len(out) > max {
		out = "..." + out[len(out)-max:]
	}
	return strings.Join(strings.Fields(strings.ReplaceAll(out, "\n", " | ")), " ")
}
