package fileposix

import (
	"log/slog"
	"os"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/filetype"
)

// ProviderName is the name of this provider, as used in provider:.
const ProviderName = "posix"

// Priority is the selection priority the factory reports (lower wins).
const Priority = 1

// Factory makes posix file providers.
type Factory struct {
	log *slog.Logger
	// names is shared by the factory's providers
	names *idNames
}

var _ resources.Factory = (*Factory)(nil)

// NewFactory returns the posix file provider factory; providers it makes log
// to log (nil discards).
func NewFactory(log *slog.Logger) *Factory {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("provider", ProviderName)
	return &Factory{log: log, names: newIDNames()}
}

// Type returns "file".
func (f *Factory) Type() string { return protocol.TypeFile }

// Name returns "posix".
func (f *Factory) Name() string { return ProviderName }

// IsManageable reports that the posix provider manages every file resource,
// with priority 1: it is the default and only file provider.
func (f *Factory) IsManageable(map[string]any, resources.Properties) (bool, int, error) {
	return true, Priority, nil
}

// New returns a posix provider. The factory's providers share a cache of
// user and group names.
func (f *Factory) New() (resources.Provider, error) {
	return &Provider{log: f.log, names: f.names}, nil
}

// Provider manages files and directories with POSIX system calls. It holds
// no state between calls but a cache of user and group names, and is safe
// for concurrent use on different paths.
type Provider struct {
	log   *slog.Logger
	names *idNames
	// sync, when set, replaces the fsync of Store's temporary file before
	// its rename (tests record the call and what is visible at its time)
	sync func(*os.File) error
	// opened, when set, is told of every walk to a parent directory (tests
	// count them)
	opened func(name string)
}

var _ filetype.Provider = (*Provider)(nil)

// New returns a posix file provider logging to log (nil discards).
func New(log *slog.Logger) *Provider {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Provider{log: log.With("provider", ProviderName), names: newIDNames()}
}

// Name returns "posix".
func (p *Provider) Name() string { return ProviderName }
