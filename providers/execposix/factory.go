package execposix

import (
	"log/slog"
	"os"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/providers/runner"
	"github.com/ccm-fleet/ccm/resources"
)

// Provider names and selection priorities (lower wins).
const (
	// PosixName is the name of the default exec provider.
	PosixName = "posix"
	// ShellName is the name of the provider that runs commands via /bin/sh.
	ShellName = "shell"
	// PosixPriority is the posix provider's priority; it is always manageable.
	PosixPriority = 1
	// ShellPriority is the shell provider's priority; it is only ever used
	// when named, as it is ExplicitOnly.
	ShellPriority = 99
	// ShellPath is the shell the shell provider runs commands with.
	ShellPath = "/bin/sh"
)

// PosixFactory makes posix exec providers.
type PosixFactory struct {
	runner runner.Runner
	log    *slog.Logger
}

// ShellFactory makes shell exec providers.
type ShellFactory struct {
	runner runner.Runner
	log    *slog.Logger
	shell  string
}

var (
	_ resources.Factory      = (*PosixFactory)(nil)
	_ resources.Factory      = (*ShellFactory)(nil)
	_ resources.ExplicitOnly = (*ShellFactory)(nil)
)

// NewPosixFactory returns the factory of the posix exec provider, which runs
// commands through r (runner.Exec{} for real processes) and logs to log (nil
// discards).
func NewPosixFactory(r runner.Runner, log *slog.Logger) *PosixFactory {
	return &PosixFactory{runner: r, log: orDiscard(log)}
}

// Type implements resources.Factory.
func (*PosixFactory) Type() string { return protocol.TypeExec }

// Name implements resources.Factory.
func (*PosixFactory) Name() string { return PosixName }

// IsManageable implements resources.Factory: posix can run any exec
// resource, at PosixPriority.
func (*PosixFactory) IsManageable(map[string]any, resources.Properties) (bool, int, error) {
	return true, PosixPriority, nil
}

// New implements resources.Factory.
func (f *PosixFactory) New() (resources.Provider, error) {
	if f.runner == nil {
		return nil, ErrNoRunner
	}
	return &Posix{base: base{name: PosixName, runner: f.runner, log: f.log}}, nil
}

// NewShellFactory returns the factory of the shell exec provider, which runs
// commands as /bin/sh -c through r (runner.Exec{} for real processes) and
// logs to log (nil discards).
func NewShellFactory(r runner.Runner, log *slog.Logger) *ShellFactory {
	return &ShellFactory{runner: r, log: orDiscard(log), shell: ShellPath}
}

// Type implements resources.Factory.
func (*ShellFactory) Type() string { return protocol.TypeExec }

// Name implements resources.Factory.
func (*ShellFactory) Name() string { return ShellName }

// ExplicitOnly implements resources.ExplicitOnly: the shell provider is used
// only when a resource names it with provider: shell.
func (*ShellFactory) ExplicitOnly() bool { return true }

// IsManageable implements resources.Factory: shell can run any exec resource
// on a host where /bin/sh exists and is executable, at ShellPriority.
func (f *ShellFactory) IsManageable(map[string]any, resources.Properties) (bool, int, error) {
	st, err := os.Stat(f.shell)
	if err != nil {
		return false, ShellPriority, nil
	}
	return st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0, ShellPriority, nil
}

// New implements resources.Factory.
func (f *ShellFactory) New() (resources.Provider, error) {
	if f.runner == nil {
		return nil, ErrNoRunner
	}
	return &Shell{base: base{name: ShellName, runner: f.runner, log: f.log}, shell: f.shell}, nil
}

func orDiscard(log *slog.Logger) *slog.Logger {
	if log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return log
}
