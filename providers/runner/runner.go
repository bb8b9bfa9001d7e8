package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
	// process group was killed.
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
	// SearchPath, when set, is the colon separated PATH used to find Path
	// and given to the process.
	SearchPath string
	// Timeout kills the process group after this long; zero means no limit
	// beyond ctx.
	Timeout time.Duration
	// MaxOutput bounds the bytes kept of stdout and of stderr each; zero
	// means DefaultMaxOutput.
	MaxOutput int
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

// Exec runs real processes, each in its own process group.
type Exec struct{}

var _ Runner = Exec{}

// Run implements Runner.
func (Exec) Run(ctx context.Context, c Command) (*Result, error) {
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

	cmd := exec.CommandContext(ctx, path, c.Args...)
	cmd.Dir = c.Dir
	cmd.Env = os.Environ()
	if c.SearchPath != "" {
		cmd.Env = append(cmd.Env, "PATH="+c.SearchPath)
	}
	cmd.Env = append(cmd.Env, c.Env...)
	cmd.Stdin = nil
	cmd.Stdout = stdout
	cmd.Stderr = stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		// Kill the whole group so children of the command die too.
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	// Stop waiting for output pipes held open by stray grandchildren.
	cmd.WaitDelay = 2 * time.Second

	start := time.Now()
	err = cmd.Run()
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
