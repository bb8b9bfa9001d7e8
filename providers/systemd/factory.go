package systemd

import (
	"io"
	"log/slog"
	"os/exec"
	"sync"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/providers/runner"
	"github.com/ccm-fleet/ccm/resources"
)

// ProviderName is the name of this provider, as used in provider:.
const ProviderName = "systemd"

// Priority is the selection priority of this provider when it is manageable
// (lower numbers win).
const Priority = 1

// systemctl is the command every operation runs, looked up in PATH.
const systemctl = "systemctl"

// Factory makes systemd service providers. It owns the lock that serialises
// the systemctl calls of every provider it makes.
type Factory struct {
	runner   runner.Runner
	log      *slog.Logger
	lookPath func(file string) (string, error)
	lock     *sync.Mutex
}

var _ resources.Factory = (*Factory)(nil)

// Option changes an optional dependency of a Factory.
type Option func(*Factory)

// WithLookPath replaces the PATH lookup IsManageable uses to find systemctl
// (exec.LookPath by default); tests use it to decide availability.
func WithLookPath(lookPath func(file string) (string, error)) Option {
	return func(f *Factory) { f.lookPath = lookPath }
}

// WithLock makes the factory's providers serialise their systemctl calls on
// lock instead of on a lock of the factory's own, so that several factories
// can share one.
func WithLock(lock *sync.Mutex) Option {
	return func(f *Factory) { f.lock = lock }
}

// NewFactory returns a factory whose providers run systemctl through r and
// log to log (nil discards). Its providers share one lock that serialises
// their systemctl calls.
func NewFactory(r runner.Runner, log *slog.Logger, opts ...Option) *Factory {
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	f := &Factory{runner: r, log: log, lookPath: exec.LookPath, lock: &sync.Mutex{}}
	for _, opt := range opts {
		opt(f)
	}
	return f
}

// Type returns "service".
func (f *Factory) Type() string { return protocol.TypeService }

// Name returns "systemd".
func (f *Factory) Name() string { return ProviderName }

// IsManageable reports whether systemctl is in PATH; when it is, the
// provider is manageable with priority 1. The facts and properties are not
// consulted, and a failed lookup is "not manageable", never an error.
func (f *Factory) IsManageable(_ map[string]any, _ resources.Properties) (bool, int, error) {
	path, err := f.lookPath(systemctl)
	if err != nil {
		f.log.Debug("systemd provider unavailable", "error", err)
		return false, 0, nil
	}
	f.log.Debug("systemd provider available", "systemctl", path)
	return true, Priority, nil
}

// New returns a new provider instance; it runs daemon-reload once, before
// its first operation.
func (f *Factory) New() (resources.Provider, error) {
	return &Provider{
		runner: f.runner,
		log:    f.log.With("provider", ProviderName),
		lock:   f.lock,
	}, nil
}
