package runner

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
)

// Fake is a Runner that answers from a script of expected commands, in
// order, and fails any call whose argv differs from the next expectation.
// Tests feed it real captured output kept in testdata/.
type Fake struct {
	// guards everything below
	mu     sync.Mutex
	script []Expectation
	calls  []Command
	errs   []string
}

// Expectation is one scripted call and its answer.
type Expectation struct {
	Argv   []string
	Result Result
	Err    error
	// Env, when set, must each be present in the command's Env.
	Env []string
}

var _ Runner = (*Fake)(nil)

// Expect adds a call returning exitCode with stdout.
func (f *Fake) Expect(argv []string, exitCode int, stdout string) *Fake {
	return f.Add(Expectation{Argv: argv, Result: Result{ExitCode: exitCode, Stdout: []byte(stdout)}})
}

// ExpectFile adds a call returning exitCode with the contents of a testdata
// file as stdout; it panics when the file cannot be read, as fixtures are
// part of the test.
func (f *Fake) ExpectFile(argv []string, exitCode int, stdoutFile string) *Fake {
	b, err := os.ReadFile(stdoutFile)
	if err != nil {
		panic(fmt.Sprintf("fixture %s: %v", stdoutFile, err))
	}
	return f.Expect(argv, exitCode, string(b))
}

// Add appends an expectation.
func (f *Fake) Add(e Expectation) *Fake {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.script = append(f.script, e)
	return f
}

// Run implements Runner.
func (f *Fake) Run(ctx context.Context, c Command) (*Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, c)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(f.script) == 0 {
		err := fmt.Errorf("unexpected command %q: no more calls were expected", c.Argv())
		f.errs = append(f.errs, err.Error())
		return nil, err
	}
	next := f.script[0]
	if !slices.Equal(next.Argv, c.Argv()) {
		err := fmt.Errorf("unexpected command %q, expected %q", c.Argv(), next.Argv)
		f.errs = append(f.errs, err.Error())
		return nil, err
	}
	for _, kv := range next.Env {
		if !slices.Contains(c.Env, kv) {
			err := fmt.Errorf("command %q: environment lacks %s (has %q)", c.Argv(), kv, c.Env)
			f.errs = append(f.errs, err.Error())
			return nil, err
		}
	}
	f.script = f.script[1:]
	res := next.Result
	return &res, next.Err
}

// Calls returns every command run so far.
func (f *Fake) Calls() []Command {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// Verify returns an error when calls went wrong or expectations remain.
func (f *Fake) Verify() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	var problems []string
	problems = append(problems, f.errs...)
	for _, e := range f.script {
		problems = append(problems, fmt.Sprintf("expected command %q was not run", e.Argv))
	}
	if len(problems) > 0 {
		return fmt.Errorf("fake runner: %s", strings.Join(problems, "; "))
	}
	return nil
}
