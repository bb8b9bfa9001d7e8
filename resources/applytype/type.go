package applytype

import (
	"context"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources"
)

// Type is the apply resource type.
type Type struct{}

var _ resources.Type = Type{}

// Name is "apply".
func (Type) Name() string { return protocol.TypeApply }

// DefaultEnsure is present.
func (Type) DefaultEnsure() string { return EnsurePresent }

// NewProperties returns empty apply properties.
func (Type) NewProperties() resources.Properties { return &Properties{} }

// Apply fails with ErrManifestOnly: a manifest run intercepts apply
// resources and runs their child manifests itself.
func (Type) Apply(context.Context, *resources.ApplyContext, resources.Properties, resources.Provider) (*resources.Outcome, error) {
	return nil, ErrManifestOnly
}

// ProviderName is the name of the apply type's only provider.
const ProviderName = "ccmmanifest"

// Factory is the apply type's only provider: a marker that lets the engine
// prepare an apply resource; the manifest run does the work.
type Factory struct{}

var _ resources.Factory = Factory{}

// Type is "apply".
func (Factory) Type() string { return protocol.TypeApply }

// Name is "ccmmanifest", as in CCM.
func (Factory) Name() string { return ProviderName }

// IsManageable is true everywhere.
func (Factory) IsManageable(map[string]any, resources.Properties) (bool, int, error) {
	return true, 0, nil
}

// New returns the marker provider.
func (Factory) New() (resources.Provider, error) { return marker{}, nil }

type marker struct{}

func (marker) Name() string { return ProviderName }
