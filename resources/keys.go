package resources

import (
	"reflect"
	"slices"
	"strings"
	"sync"
)

// Keys is the property names a type's properties accept, as their JSON
// tags say: each name maps to the Keys of its value when that value is an
// object with fixed keys (control), nil otherwise.
type Keys map[string]Keys

// keysByType caches PropertyKeys by properties type: admission checks
// every request's keys, and the schema of a type never changes.
var keysByType sync.Map // reflect.Type -> Keys

// PropertyKeys returns the property names a resource of type t accepts,
// "name" included; embedded structs without a tag are flattened. The
// result is shared: callers must not change it.
func PropertyKeys(t Type) Keys {
	rt := reflect.TypeOf(t.NewProperties())
	if k, ok := keysByType.Load(rt); ok {
		return k.(Keys)
	}
	k, _ := keysByType.LoadOrStore(rt, keysOf(rt))
	return k.(Keys)
}

// Names returns the top-level names, sorted.
func (k Keys) Names() []string {
	out := make([]string, 0, len(k))
	for n := range k {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// Unknown returns the first key of props (in sorted order, descending into
// objects with fixed keys) that k does not have, exactly as written, with
// the dotted path of the object holding it ("" at the top); ok is false
// when every key is known.
func (k Keys) Unknown(props map[string]any) (parent, key string, ok bool) {
	return k.unknownIn(props, "")
}

func (k Keys) unknownIn(props map[string]any, parent string) (string, string, bool) {
	names := make([]string, 0, len(props))
	for n := range props {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		sub, known := k[n]
		if !known {
			return parent, n, true
		}
		if m, isMap := props[n].(map[string]any); isMap && sub != nil {
			child := n
			if parent != "" {
				child = parent + "." + n
			}
			if p, key, bad := sub.unknownIn(m, child); bad {
				return p, key, true
			}
		}
	}
	return "", "", false
}

func keysOf(t reflect.Type) Keys {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	ks := Keys{}
	if t.Kind() != reflect.Struct {
		return ks
	}
	for f := range t.Fields() {
		tag, hasTag := f.Tag.Lookup("json")
		name, _, _ := strings.Cut(tag, ",")
		if name == "-" && !strings.Contains(tag, ",") {
			continue
		}
		if f.Anonymous && (!hasTag || name == "") {
			for n, v := range keysOf(f.Type) {
				ks[n] = v
			}
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		ks[name] = nestedKeys(f.Type)
	}
	return ks
}

// nestedKeys describes a field whose value is an object with fixed keys.
func nestedKeys(t reflect.Type) Keys {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() == reflect.Struct && t.NumField() > 0 {
		return keysOf(t)
	}
	return nil
}
