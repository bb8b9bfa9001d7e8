package manifest

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/catalog"
)

// splatKey sets properties from a map, each key of it a property: its
// value is an object, or a template that evaluates to one.
const splatKey = "*"

// defaultsKey names the entry of a list whose properties every other entry
// of that list starts from.
const defaultsKey = "defaults"

// BuiltinTypes returns the resource types Parse checks property names
// against when ParseOptions.Types is empty: the resource catalog's. It
// holds only the types (what properties they accept), never providers.
func BuiltinTypes() []resources.Type { return catalog.Types() }

// BuiltinProviders returns, per type name, the names of the providers
// providers.Builtin registers (the resource catalog's), so a client that
// must not import the providers (ccm-orch) can refuse a provider: no agent
// has before sending. A test in providers keeps the catalog and the
// registry equal.
func BuiltinProviders() map[string][]string { return catalog.Providers() }

// typeSet is the resource types a manifest may use, by name.
type typeSet map[string]*typeInfo

// typeInfo is what parsing needs of one type: its property names, with
// nested objects (control) described too.
type typeInfo struct {
	name  string
	props resources.Keys
}

func newTypeSet(types []resources.Type) typeSet {
	if len(types) == 0 {
		types = BuiltinTypes()
	}
	ts := typeSet{}
	for _, t := range types {
		ts[t.Name()] = &typeInfo{name: t.Name(), props: resources.PropertyKeys(t)}
	}
	return ts
}

// names lists the known type names, sorted, for error messages.
func (ts typeSet) names() string {
	out := make([]string, 0, len(ts))
	for n := range ts {
		out = append(out, n)
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}

// PropertyNames returns the property names a resource of type t accepts, as
// its JSON tags say, sorted; "name" included. Nested objects are not listed.
func PropertyNames(t resources.Type) []string { return resources.PropertyKeys(t).Names() }

// checkKeys fails on the first key of props that ks does not know,
// descending into nested objects and into a splat ("*") map.
func checkKeys(props map[string]any, ks resources.Keys) error {
	if m, isMap := props[splatKey].(map[string]any); isMap {
		if parent, key, bad := ks.Unknown(m); bad {
			return fmt.Errorf("unknown property %q", joinKey(splatKey, joinKey(parent, key)))
		}
	}
	rest := props
	if _, has := props[splatKey]; has {
		rest = make(map[string]any, len(props))
		for k, v := range props {
			if k != splatKey {
				rest[k] = v
			}
		}
	}
	if parent, key, bad := ks.Unknown(rest); bad {
		return fmt.Errorf("unknown property %q", joinKey(parent, key))
	}
	return nil
}

// joinKey is parent.key, or key at the top.
func joinKey(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
