package scaffoldchoria

import (
	"log/slog"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources"
)

// Name is the provider's name, as used in provider:.
const Name = "choria"

// Factory makes choria scaffold providers; it can manage every scaffold.
type Factory struct {
	log *slog.Logger
}

var _ resources.Factory = (*Factory)(nil)

// NewFactory returns the choria scaffold provider factory; providers log to
// log (nil discards).
func NewFactory(log *slog.Logger) *Factory {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Factory{log: log}
}

// Type returns "scaffold".
func (f *Factory) Type() string { return protocol.TypeScaffold }

// Name returns "choria".
func (f *Factory) Name() string { return Name }

// IsManageable always reports true with priority 1: the provider needs
// nothing from the host.
func (f *Factory) IsManageable(map[string]any, resources.Properties) (bool, int, error) {
	return true, 1, nil
}

// New returns a provider.
func (f *Factory) New() (resources.Provider, error) {
	return New(f.log), nil
}
