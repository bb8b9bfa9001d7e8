package applytype

import (
	"path/filepath"
	"strings"

	"github.com/ccm-fleet/ccm/resources"
)

// EnsurePresent resolves and runs the child manifest; it is the only, and
// the default, ensure value.
const EnsurePresent = "present"

// MaxDepth is how deeply apply resources may nest, whatever allow_apply
// says (CCM's limit).
const MaxDepth = 10

// Properties are the properties of an apply resource.
type Properties struct {
	resources.CommonProperties

	// Noop runs the child in noop mode; it can only strengthen the
	// parent's mode, never weaken it.
	Noop bool `json:"noop,omitempty"`
	// HealthCheckOnly runs only the child's health checks; like Noop it
	// only strengthens.
	HealthCheckOnly bool `json:"health_check_only,omitempty"`
	// AllowApply, when false, refuses a child manifest holding apply
	// resources of its own before any of its resources runs; nil is true.
	AllowApply *bool `json:"allow_apply,omitempty"`
	// Data is merged over the child's resolved data, top-level key by key;
	// data given to the whole run (--data) still wins.
	Data map[string]any `json:"data,omitempty"`
}

var _ resources.Properties = (*Properties)(nil)

// Validate sets the default ensure (present), then checks the common
// properties, the ensure value and the path. Failures wrap
// resources.ErrInvalid and name the property at fault.
func (p *Properties) Validate() error {
	if p.Ensure == "" {
		p.Ensure = EnsurePresent
	}
	if err := p.ValidateCommon(); err != nil {
		return err
	}
	if p.Ensure != EnsurePresent {
		return resources.InvalidField("ensure", "%q is not %s, the only ensure value of apply", p.Ensure, EnsurePresent)
	}
	if strings.ContainsRune(p.Name, 0) {
		return resources.InvalidField("name", "path contains a NUL byte")
	}
	return nil
}

// NestedAllowed reports whether the child may hold apply resources.
func (p *Properties) NestedAllowed() bool { return p.AllowApply == nil || *p.AllowApply }

// ChildPath is the child manifest's path: name joined to dir (the parent
// manifest's directory) unless it is absolute.
func ChildPath(name, dir string) string {
	if filepath.IsAbs(name) || dir == "" {
		return filepath.Clean(name)
	}
	return filepath.Join(dir, name)
}
