package resources

import (
	"fmt"
	"slices"
	"sort"
)

// Factory describes one provider of one type and makes instances of it.
type Factory interface {
	// Type is the resource type the provider manages.
	Type() string
	// Name is the provider's name, as used in provider:.
	Name() string
	// IsManageable reports whether the provider can manage props on a host
	// with these facts, and its priority: lower numbers win.
	IsManageable(facts map[string]any, props Properties) (ok bool, priority int, err error)
	// New returns a provider instance. Instances live for one run (one
	// ensure, or one manifest) so per-run work such as a daemon reload is
	// done once per run.
	New() (Provider, error)
}

// ExplicitOnly is implemented by factories whose provider is used only when a
// resource names it with provider:, never by automatic selection.
type ExplicitOnly interface {
	ExplicitOnly() bool
}

// Registry maps type names to types and to their provider factories. Build
// one value in one visible place (providers.Builtin) and pass it on; it is
// read-only once built and then safe for concurrent use.
type Registry struct {
	types     map[string]Type
	factories map[string][]Factory
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{types: map[string]Type{}, factories: map[string][]Factory{}}
}

// RegisterType adds a type; registering a name twice is ErrDuplicate.
func (r *Registry) RegisterType(t Type) error {
	if _, ok := r.types[t.Name()]; ok {
		return fmt.Errorf("type %s: %w", t.Name(), ErrDuplicate)
	}
	r.types[t.Name()] = t
	return nil
}

// RegisterProvider adds a provider factory for a registered type;
// registering the same type and name twice is ErrDuplicate.
func (r *Registry) RegisterProvider(f Factory) error {
	if _, ok := r.types[f.Type()]; !ok {
		return fmt.Errorf("provider %s: %w %q", f.Name(), ErrUnknownType, f.Type())
	}
	for _, have := range r.factories[f.Type()] {
		if have.Name() == f.Name() {
			return fmt.Errorf("provider %s/%s: %w", f.Type(), f.Name(), ErrDuplicate)
		}
	}
	r.factories[f.Type()] = append(r.factories[f.Type()], f)
	return nil
}

// Type returns the named type, or an error wrapping ErrInvalid and ErrUnknownType.
func (r *Registry) Type(name string) (Type, error) {
	t, ok := r.types[name]
	if !ok {
		return nil, fmt.Errorf("%w: %w %q (known: %v)", ErrInvalid, ErrUnknownType, name, r.TypeNames())
	}
	return t, nil
}

// TypeNames lists the registered type names, sorted.
func (r *Registry) TypeNames() []string {
	names := make([]string, 0, len(r.types))
	for n := range r.types {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ProviderNames lists the providers registered for a type, in registration order.
func (r *Registry) ProviderNames(typeName string) []string {
	var names []string
	for _, f := range r.factories[typeName] {
		names = append(names, f.Name())
	}
	return names
}

// Select picks the provider for a resource of typeName: the one named by
// want when it is set, otherwise the manageable provider with the lowest
// priority. Naming a provider the type lacks is ErrInvalid+ErrUnknownProvider;
// finding none able to manage the resource is ErrNoSuitableProvider.
func (r *Registry) Select(typeName, want string, facts map[string]any, props Properties) (Factory, error) {
	all := r.factories[typeName]
	if want != "" {
		i := slices.IndexFunc(all, func(f Factory) bool { return f.Name() == want })
		if i < 0 {
			return nil, fmt.Errorf("%w: %w %q for %s (known: %v)", ErrInvalid, ErrUnknownProvider, want, typeName, r.ProviderNames(typeName))
		}
		ok, _, err := all[i].IsManageable(facts, props)
		if err != nil {
			return nil, fmt.Errorf("provider %s: %w", want, err)
		}
		if !ok {
			return nil, fmt.Errorf("%w: provider %s cannot manage this %s on this host", ErrNoSuitableProvider, want, typeName)
		}
		return all[i], nil
	}
	var best Factory
	bestPrio := 0
	for _, f := range all {
		if e, ok := f.(ExplicitOnly); ok && e.ExplicitOnly() {
			continue
		}
		ok, prio, err := f.IsManageable(facts, props)
		if err != nil {
			return nil, fmt.Errorf("provider %s: %w", f.Name(), err)
		}
		if ok && (best == nil || prio < bestPrio) {
			best, bestPrio = f, prio
		}
	}
	if best == nil {
		return nil, fmt.Errorf("%w for %s on this host (providers: %v)", ErrNoSuitableProvider, typeName, r.ProviderNames(typeName))
	}
	return best, nil
}
