package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/choria-io/fisk"

	"github.com/ccm-fleet/ccm/cmd/internal/program"
	"github.com/ccm-fleet/ccm/protocol"
)

// forward is a command ccm-orch runs as a binary of its own: the broker
// and the benchmark link the NATS server, the agent and the providers,
// which the operators' client does not carry.
type forward struct {
	// bin is the binary's name, looked for beside ccm-orch, then on PATH.
	bin string
	// help is the command's help in ccm-orch.
	help string
	// missing says how to get the binary when it is not found.
	missing string
}

// forwarded are the forwarded commands by name. ccm-orch NAME ARGS runs
// BIN run ARGS: the same flags and arguments, unchanged.
var forwarded = map[string]forward{
	"broker": {
		bin:     "ccm-broker",
		help:    "Run an embedded NATS broker with JetStream, alone or in a cluster: runs ccm-broker (beside ccm-orch, else on PATH) with every argument unchanged; ccm-orch broker --help shows its flags",
		missing: "it ships in the ccm-fleet package beside ccm-orch; in a source tree, make build puts it in bin/",
	},
	"bench": {
		bin:     "ccm-bench",
		help:    "Measure fleet runs against the raw NATS floor: runs ccm-bench (beside ccm-orch, else on PATH) with every argument unchanged; ccm-orch bench --help shows its flags",
		missing: "it is not packaged: build it with make build (bin/ccm-bench, beside bin/ccm-orch and bin/ccm-agent)",
	},
}

// forwardRun is the command of a forwarded binary that the arguments go
// to (its default command).
const forwardRun = "run"

// registerForwarded adds the forwarded commands, so they show in --help
// with what they run. Their arguments are taken before parsing (see
// splitForwarded): a flag of the other binary is not one of ccm-orch.
func (a *app) registerForwarded(cli *fisk.Application) {
	for _, name := range []string{"broker", "bench"} {
		f := forwarded[name]
		var rest []string
		cmd := cli.Command(name, f.help)
		cmd.Arg("args", f.bin+"'s flags and arguments, passed on unchanged").StringsVar(&rest)
		cmd.Action(func(*fisk.ParseContext) error { return a.forward(f, nil, rest) })
	}
}

// splitForwarded finds a forwarded command in args, after ccm-orch's own
// global flags: it returns them, the command and the arguments after it.
func splitForwarded(args []string) (global []string, f forward, rest []string, ok bool) {
	for i := 0; i < len(args); i++ {
		arg := args[i]
		switch {
		case arg == "-v" || arg == "--verbose" || arg == "--no-verbose" || arg == "--debug" || arg == "--no-debug",
			strings.HasPrefix(arg, "--log-format=") || strings.HasPrefix(arg, "--log-level="):
			continue
		case arg == "--log-format" || arg == "--log-level":
			i++
			continue
		}
		f, ok = forwarded[arg]
		if !ok {
			return nil, forward{}, nil, false
		}
		return args[:i], f, args[i+1:], true
	}
	return nil, forward{}, nil, false
}

// forward replaces this process with f's binary, given global flags, its
// run command and rest; it returns only when that fails (exit 1 naming
// the binary and where it was looked for).
func (a *app) forward(f forward, global, rest []string) error {
	path, err := a.findBinary(f.bin)
	if err != nil {
		return program.Exit(protocol.ExitError, fmt.Errorf("%w: %s", err, f.missing))
	}
	argv := append([]string{f.bin}, global...)
	argv = append(argv, forwardRun)
	argv = append(argv, rest...)
	execve := a.execve
	if execve == nil {
		execve = syscall.Exec
	}
	if err := execve(path, argv, os.Environ()); err != nil {
		return program.Exit(protocol.ExitError, fmt.Errorf("run %s: %w", path, err))
	}
	return nil
}

// errNoBinary is wrapped when a forwarded command's binary is not found.
var errNoBinary = errors.New("not found")

// findBinary is name in the directory of the running ccm-orch (its
// symbolic links resolved), else on PATH.
func (a *app) findBinary(name string) (string, error) {
	self := a.self
	if self == nil {
		self = os.Executable
	}
	dir := "(the running ccm-orch's directory, unknown)"
	if exe, err := self(); err == nil {
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			exe = real
		}
		dir = filepath.Dir(exe)
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("%s %w in %s (beside ccm-orch) nor on PATH", name, errNoBinary, dir)
}
