package manifest

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/archivetype"
	"github.com/ccm-fleet/ccm/resources/exectype"
	"github.com/ccm-fleet/ccm/resources/filetype"
	"github.com/ccm-fleet/ccm/resources/pkgtype"
	"github.com/ccm-fleet/ccm/resources/scaffoldtype"
	"github.com/ccm-fleet/ccm/resources/servicetype"
)

// splatKey sets properties from a map (seed 002 "attributes from a hash"):
// its value is an object, or a template that evaluates to one.
const splatKey = "*"

// defaultsKey names the entry of a list whose properties every other entry
// of that list starts from.
const defaultsKey = "defaults"

// BuiltinTypes returns the resource types Parse checks property names
// against when ParseOptions.Types is empty. It holds only the types (what
// properties they accept), never providers.
func BuiltinTypes() []resources.Type {
	return []resources.Type{
		archivetype.Type{},
		exectype.Type{},
		filetype.Type{},
		pkgtype.Type{},
		scaffoldtype.Type{},
		servicetype.Type{},
	}
}

// typeSet is the resource types a manifest may use, by name.
type typeSet map[string]*typeInfo

// typeInfo is what parsing needs of one type: its property names, with
// nested objects (control) described too.
type typeInfo struct {
	name  string
	props fieldSet
}

// fieldSet maps a property name to the properties of its value when that
// value is an object with fixed keys (nil otherwise).
type fieldSet map[string]fieldSet

func newTypeSet(types []resources.Type) typeSet {
	if len(types) == 0 {
		types = BuiltinTypes()
	}
	ts := typeSet{}
	for _, t := range types {
		ts[t.Name()] = &typeInfo{name: t.Name(), props: fieldsOf(reflect.TypeOf(t.NewProperties()))}
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
func PropertyNames(t resources.Type) []string {
	fs := fieldsOf(reflect.TypeOf(t.NewProperties()))
	out := make([]string, 0, len(fs))
	for n := range fs {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// fieldsOf lists the JSON names of a struct's fields the way encoding/json
// decodes them: embedded structs without a tag are flattened.
func fieldsOf(t reflect.Type) fieldSet {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	fs := fieldSet{}
	if t.Kind() != reflect.Struct {
		return fs
	}
	for f := range t.Fields() {
		tag, hasTag := f.Tag.Lookup("json")
		name, _, _ := strings.Cut(tag, ",")
		if name == "-" && !strings.Contains(tag, ",") {
			continue
		}
		if f.Anonymous && (!hasTag || name == "") {
			for k, v := range fieldsOf(f.Type) {
				fs[k] = v
			}
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fs[name] = nestedFields(f.Type)
	}
	return fs
}

// nestedFields describes a field whose value is an object with fixed keys.
func nestedFields(t reflect.Type) fieldSet {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() == reflect.Struct && t.NumField() > 0 {
		return fieldsOf(t)
	}
	return nil
}

// checkKeys fails on the first key of props that fs does not know,
// descending into nested objects; path prefixes nested names.
func checkKeys(props map[string]any, fs fieldSet, path string) error {
	for _, k := range sortedKeys(props) {
		if path == "" && k == splatKey {
			if m, isMap := props[k].(map[string]any); isMap {
				if err := checkKeys(m, fs, splatKey+"."); err != nil {
					return err
				}
			}
			continue
		}
		sub, ok := fs[k]
		if !ok {
			return fmt.Errorf("unknown property %q", path+k)
		}
		if m, isMap := props[k].(map[string]any); isMap && sub != nil {
			if err := checkKeys(m, sub, path+k+"."); err != nil {
				return err
			}
		}
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
