package shadow

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/ccm-fleet/ccm/providers/runner"
	"github.com/ccm-fleet/ccm/resources"
)

// SearchPath is where every tool is looked up (and the PATH it runs with):
// the system directories, whatever the agent's own PATH.
const SearchPath = "/usr/sbin:/usr/bin:/sbin:/bin"

// maxOutput bounds what is kept of a tool's output; maxMessage how much
// of it goes into an error.
const (
	maxOutput  = 4 << 20
	maxMessage = 512
)

// tools runs the shadow tools for the providers of one factory.
type tools struct {
	runner runner.Runner
	log    *slog.Logger
	// lock serialises changes: the tools lock the account files, and two
	// at once would fail rather than wait.
	lock *sync.Mutex
}

func newTools(r runner.Runner, log *slog.Logger, lock *sync.Mutex) tools {
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if lock == nil {
		lock = &sync.Mutex{}
	}
	return tools{runner: r, log: log, lock: lock}
}

// getent runs getent DATABASE KEYS...; found is false for exit code 2
// (a key not found).
func (t tools) getent(ctx context.Context, db string, keys ...string) (out string, found bool, err error) {
	res, err := t.runner.Run(ctx, runner.Command{Path: "getent", Args: append([]string{db}, keys...), SearchPath: SearchPath, Env: []string{"LC_ALL=C"}, MaxOutput: maxOutput})
	if err != nil {
		return "", false, fmt.Errorf("getent %s: %w", db, err)
	}
	switch res.ExitCode {
	case 0:
		return string(res.Stdout), true, nil
	case 2:
		return string(res.Stdout), false, nil
	}
	return "", false, fmt.Errorf("getent %s %s: %w: exit code %d: %s", db, strings.Join(keys, " "), ErrCommand, res.ExitCode, res.Tail(maxMessage))
}

// change runs a tool that changes the account files, holding the lock;
// stdin, when set, is its standard input (never shown).
func (t tools) change(ctx context.Context, stdin []byte, tool string, args ...string) error {
	t.lock.Lock()
	defer t.lock.Unlock()
	resources.Logger(ctx, t.log).Debug("running", "command", tool, "args", args)
	res, err := t.runner.Run(ctx, runner.Command{Path: tool, Args: args, SearchPath: SearchPath, Env: []string{"LC_ALL=C"}, MaxOutput: maxOutput, Stdin: stdin})
	if err != nil {
		return fmt.Errorf("%s: %w", tool, err)
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("%s %s: %w: exit code %d: %s", tool, strings.Join(args, " "), ErrCommand, res.ExitCode, strings.TrimSpace(res.Tail(maxMessage)))
	}
	return nil
}

// haveTools reports whether every tool is in SearchPath.
func haveTools(lookPath func(string) (string, error), names ...string) (bool, string) {
	for _, n := range names {
		found := false
		for _, dir := range filepath.SplitList(SearchPath) {
			if _, err := lookPath(filepath.Join(dir, n)); err == nil {
				found = true
				break
			}
		}
		if !found {
			return false, n
		}
	}
	return true, ""
}

// defaultLookPath is exec.LookPath.
var defaultLookPath = exec.LookPath

// factory is what the user and group factories share: the type and
// provider names, the tools their providers need, and how to make one.
type factory struct {
	typ, name string
	tools     tools
	need      []string
	make      func(tools) resources.Provider
	lookPath  func(string) (string, error)
}

func newFactory(r runner.Runner, log *slog.Logger, lock *sync.Mutex, typ, name string, make func(tools) resources.Provider, need ...string) factory {
	return factory{typ: typ, name: name, tools: newTools(r, log, lock), need: need, make: make, lookPath: defaultLookPath}
}

// Type returns the resource type, "user" or "group".
func (f *factory) Type() string { return f.typ }

// Name returns the provider's name, "useradd" or "groupadd".
func (f *factory) Name() string { return f.name }

// IsManageable reports whether every tool the providers run is in
// SearchPath (priority 1); a missing one is "not manageable", never an
// error.
func (f *factory) IsManageable(_ map[string]any, _ resources.Properties) (bool, int, error) {
	if ok, missing := haveTools(f.lookPath, f.need...); !ok {
		f.tools.log.Debug(f.name+" provider unavailable", "missing", missing)
		return false, 0, nil
	}
	return true, Priority, nil
}

// New returns a provider.
func (f *factory) New() (resources.Provider, error) { return f.make(f.tools), nil }
