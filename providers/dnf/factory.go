package dnf

import (
	"log/slog"
	"sync"

	"github.com/ccm-fleet/ccm/providers/internal/pkgfactory"
	"github.com/ccm-fleet/ccm/providers/runner"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/pkgtype"
)

// ProviderName is the provider's name, as used in provider:.
const ProviderName = "dnf"

// Priority is the priority IsManageable reports; lower wins.
const Priority = 1

// Factory makes dnf providers; it is manageable on hosts whose os fact is
// "rhel" or "fedora". It is read-only once made and safe for concurrent use.
type Factory struct {
	pkgfactory.Base
}

var (
	_ resources.Factory = (*Factory)(nil)
	_ pkgtype.Provider  = (*Provider)(nil)
)

// NewFactory returns a factory of dnf providers that run their commands
// through r (nil: runner.Exec) and log to log (nil discards). lock
// serialises every package manager command of the process: pass the same
// mutex to every package provider factory (apt and dnf); nil gives this
// factory a lock of its own.
func NewFactory(r runner.Runner, log *slog.Logger, lock *sync.Mutex) *Factory {
	return &Factory{Base: pkgfactory.New(ProviderName, Priority, []string{"rhel", "fedora"}, r, log, lock)}
}

// New returns a dnf provider.
func (f *Factory) New() (resources.Provider, error) {
	return &Provider{runner: f.Runner, log: f.Log.With("provider", ProviderName), lock: f.Lock}, nil
}
