package apt

import (
	"log/slog"
	"strings"
	"sync"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/providers/runner"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/pkgtype"
)

// ProviderName is the provider's name, as used in provider:.
const ProviderName = "apt"

// Priority is the priority IsManageable reports; lower wins.
const Priority = 1

// Factory makes apt providers. It is read-only once made and safe for
// concurrent use.
type Factory struct {
	runner runner.Runner
	log    *slog.Logger
	lock   *sync.Mutex
}

var (
	_ resources.Factory = (*Factory)(nil)
	_ pkgtype.Provider  = (*Provider)(nil)
)

// NewFactory returns a factory of apt providers that run their commands
// through r (nil: runner.Exec) and log to log (nil discards). lock serialises every package
// manager command of the process: pass the same mutex to every package
// provider factory (apt and dnf); nil gives this factory a lock of its own.
func NewFactory(r runner.Runner, log *slog.Logger, lock *sync.Mutex) *Factory {
	if r == nil {
		r = runner.Exec{}
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if lock == nil {
		lock = &sync.Mutex{}
	}
	return &Factory{runner: r, log: log, lock: lock}
}

// Type returns "package".
func (f *Factory) Type() string { return protocol.TypePackage }

// Name returns "apt".
func (f *Factory) Name() string { return ProviderName }

// IsManageable reports true, with Priority, on hosts whose os fact is
// "debian", or whenever the resource names this provider with provider:.
func (f *Factory) IsManageable(facts map[string]any, props resources.Properties) (bool, int, error) {
	if props != nil {
		if c := props.Common(); c != nil && c.Provider == ProviderName {
			return true, Priority, nil
		}
	}
	if os, _ := facts["os"].(string); strings.EqualFold(os, "debian") {
		return true, Priority, nil
	}
	return false, 0, nil
}

// New returns an apt provider.
func (f *Factory) New() (resources.Provider, error) {
	return &Provider{runner: f.runner, log: f.log.With("provider", ProviderName), lock: f.lock}, nil
}
