package apt

import (
	"log/slog"
	"sync"
	"time"

	"github.com/ccm-fleet/ccm/providers/internal/pkgfactory"
	"github.com/ccm-fleet/ccm/providers/runner"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/pkgtype"
)

// ProviderName is the provider's name, as used in provider:.
const ProviderName = "apt"

// Priority is the priority IsManageable reports; lower wins.
const Priority = 1

// Factory makes apt providers; it is manageable on hosts whose os fact is
// "debian". It is read-only once made and safe for concurrent use.
type Factory struct {
	pkgfactory.Base
	lockTimeout time.Duration
}

// Option sets a factory's optional settings.
type Option func(*Factory)

// WithLockTimeout makes apt-get wait up to d for the dpkg lock
// (DPkg::Lock::Timeout, whole seconds) before it gives up with an error
// wrapping ErrLocked; never past the request's deadline. Zero or less
// keeps DefaultLockTimeout; more than MaxLockTimeout is MaxLockTimeout.
func WithLockTimeout(d time.Duration) Option {
	return func(f *Factory) {
		if d > 0 {
			f.lockTimeout = min(d, MaxLockTimeout)
		}
	}
}

var (
	_ resources.Factory = (*Factory)(nil)
	_ pkgtype.Provider  = (*Provider)(nil)
)

// NewFactory returns a factory of apt providers that run their commands
// through r (nil: runner.Exec) and log to log (nil discards). lock
// serialises every package manager command of the process: pass the same
// mutex to every package provider factory (apt and dnf); nil gives this
// factory a lock of its own. The providers wait DefaultLockTimeout for the
// dpkg lock unless an option says otherwise.
func NewFactory(r runner.Runner, log *slog.Logger, lock *sync.Mutex, opts ...Option) *Factory {
	f := &Factory{Base: pkgfactory.New(ProviderName, Priority, []string{"debian"}, r, log, lock), lockTimeout: DefaultLockTimeout}
	for _, o := range opts {
		o(f)
	}
	return f
}

// LockTimeout is how long the factory's providers wait for the dpkg lock.
func (f *Factory) LockTimeout() time.Duration { return f.lockTimeout }

// New returns a apt provider.
func (f *Factory) New() (resources.Provider, error) {
	return &Provider{
		runner: f.Runner, log: f.Log.With("provider", ProviderName), lock: f.Lock,
		lockTimeout: f.lockTimeout, lockPaths: DpkgLocks(),
	}, nil
}
