package manifest

import (
	"fmt"
	"strings"
)

// entry is one resource declaration as written: a type, a name (a string,
// or in the single-object form possibly a list, either possibly templated)
// and its own properties. Entries of one list share their defaults.
type entry struct {
	// index is the item's position in ccm.resources, for messages.
	index int
	typ   string
	// name is a string or a []any of strings, not yet expanded.
	name any
	// props are the entry's own properties, without name and without "*".
	props map[string]any
	// splat is the "*" value (an object or a template), nil when absent.
	splat any
	// defaults are the list's defaults entry, nil when it has none.
	defaults *defaults
	// decoded keeps the typed properties of its resources planned with
	// no template, for the manifest's later runs; nil (an entry of a
	// resources_jet_file, made again every run) keeps none.
	decoded *decodedCache
}

// defaults are the properties of a list's "defaults" entry.
type defaults struct {
	props map[string]any
	splat any
}

// label names the entry in messages: resources[2] file#/etc/motd.
func (e *entry) label() string {
	return fmt.Sprintf("resources[%d] %s#%s", e.index, e.typ, nameText(e.name))
}

// nameText renders a raw name for messages.
func nameText(name any) string {
	switch n := name.(type) {
	case string:
		return n
	case []any:
		parts := make([]string, 0, len(n))
		for _, p := range n {
			parts = append(parts, fmt.Sprint(p))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	default:
		return fmt.Sprint(name)
	}
}

// parseItem turns one ccm.resources item (a single-key map of type to its
// resources) into entries.
func parseItem(i int, item any, ts typeSet) ([]*entry, error) {
	obj, ok := item.(map[string]any)
	if !ok || len(obj) != 1 {
		what := kind(item)
		if ok {
			what = fmt.Sprintf("an object with %d keys", len(obj))
		}
		return nil, invalidf("resources[%d]: each item maps one resource type to its resources (e.g. file: [...]), got %s", i, what)
	}
	var typ string
	var body any
	for typ, body = range obj {
	}
	ti, ok := ts[typ]
	if !ok {
		return nil, invalidf("resources[%d]: unknown resource type %q (known: %s)", i, typ, ts.names())
	}
	switch b := body.(type) {
	case []any:
		return parseList(i, ti, b)
	case map[string]any:
		e, err := parseSingle(i, ti, b)
		if err != nil {
			return nil, err
		}
		return []*entry{e}, nil
	default:
		return nil, invalidf("resources[%d] %s: expected a list of {name: properties} entries or one object with name, got %s", i, typ, kind(body))
	}
}

// parseList reads the list form: single-key {name: properties} maps, one of
// which may be "defaults".
func parseList(i int, ti *typeInfo, list []any) ([]*entry, error) {
	var (
		out  []*entry
		defs *defaults
	)
	for j, el := range list {
		obj, ok := el.(map[string]any)
		if !ok || len(obj) != 1 {
			what := kind(el)
			if ok {
				what = fmt.Sprintf("an object with %d keys", len(obj))
			}
			return nil, invalidf("resources[%d] %s, entry %d: expected one {name: properties} pair, got %s", i, ti.name, j, what)
		}
		var name string
		var body any
		for name, body = range obj {
		}
		e := &entry{index: i, typ: ti.name, name: name}
		props, err := objectOrNil(body, e.label())
		if err != nil {
			return nil, invalidf("%s: properties must be an object, got %s", e.label(), kind(body))
		}
		if _, has := props["name"]; has {
			return nil, invalidf("%s: property name is not allowed in a list entry, the entry's key is the name (use the single-object form for name lists)", e.label())
		}
		if err := checkKeys(props, ti.props); err != nil {
			return nil, invalidf("%s: %v", e.label(), err)
		}
		own, splat := splitSplat(props)
		if name == defaultsKey {
			if defs != nil {
				return nil, invalidf("resources[%d] %s: more than one defaults entry", i, ti.name)
			}
			defs = &defaults{props: own, splat: splat}
			continue
		}
		e.props, e.splat = own, splat
		out = append(out, e)
	}
	for _, e := range out {
		e.defaults = defs
	}
	return out, nil
}

// parseSingle reads the single-object form: properties with a name that is
// a string or a list of strings.
func parseSingle(i int, ti *typeInfo, obj map[string]any) (*entry, error) {
	name, ok := obj["name"]
	if !ok || name == nil {
		return nil, invalidf("resources[%d] %s: the single-object form needs a name (a string or a list of strings)", i, ti.name)
	}
	e := &entry{index: i, typ: ti.name, name: name}
	switch n := name.(type) {
	case string:
	case []any:
		for k, v := range n {
			if _, ok := v.(string); !ok {
				return nil, invalidf("%s: name[%d]: expected a string, got %s", e.label(), k, kind(v))
			}
		}
	default:
		return nil, invalidf("resources[%d] %s: name: expected a string or a list of strings, got %s", i, ti.name, kind(name))
	}
	props := make(map[string]any, len(obj))
	for k, v := range obj {
		if k != "name" {
			props[k] = v
		}
	}
	if err := checkKeys(props, ti.props); err != nil {
		return nil, invalidf("%s: %v", e.label(), err)
	}
	e.props, e.splat = splitSplat(props)
	return e, nil
}

// splitSplat separates the "*" value from the other properties.
func splitSplat(props map[string]any) (map[string]any, any) {
	splat, ok := props[splatKey]
	if !ok {
		return props, nil
	}
	own := make(map[string]any, len(props)-1)
	for k, v := range props {
		if k != splatKey {
			own[k] = v
		}
	}
	return own, splat
}
