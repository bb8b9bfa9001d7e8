package redact

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
)

// A leaf decides what a string of a typed value becomes: top is the name
// of the top-level field (or map key) it is under, near the name of the
// nearest one, s the string.
type leaf func(top, near, s string) string

// maxTypedDepth bounds the walk of a typed value. Properties and states
// are JSON-shaped and a few levels deep; a value nested deeper is not
// walked, so it is replaced by its zero value rather than kept unredacted.
const maxTypedDepth = 64

// rewrite returns a deep copy of v in which every string, JSON names as
// the encoder would see them, is what fn makes of it. Nothing of v is
// changed or shared: the copy may be changed further. Unexported fields
// are copied as they are (they are never encoded); a json.RawMessage is
// kept when fn keeps its text and becomes fn's answer as a JSON string
// otherwise.
func rewrite(v reflect.Value, fn leaf) reflect.Value {
	return walk(v, "", "", 0, fn)
}

var rawMessageType = reflect.TypeFor[json.RawMessage]()

func walk(v reflect.Value, top, near string, depth int, fn leaf) reflect.Value {
	if depth > maxTypedDepth {
		return reflect.Zero(v.Type())
	}
	switch v.Kind() {
	case reflect.String:
		out := reflect.New(v.Type()).Elem()
		out.SetString(fn(top, near, v.String()))
		return out
	case reflect.Pointer:
		if v.IsNil() {
			return v
		}
		out := reflect.New(v.Type().Elem())
		out.Elem().Set(walk(v.Elem(), top, near, depth, fn))
		return out
	case reflect.Interface:
		if v.IsNil() {
			return v
		}
		out := reflect.New(v.Type()).Elem()
		out.Set(walk(v.Elem(), top, near, depth, fn))
		return out
	case reflect.Struct:
		return walkStruct(v, top, near, depth, fn)
	case reflect.Slice:
		if v.IsNil() {
			return v
		}
		if v.Type() == rawMessageType {
			return walkRaw(v, top, near, fn)
		}
		out := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		for i := range v.Len() {
			out.Index(i).Set(walk(v.Index(i), top, near, depth+1, fn))
		}
		return out
	case reflect.Array:
		out := reflect.New(v.Type()).Elem()
		for i := range v.Len() {
			out.Index(i).Set(walk(v.Index(i), top, near, depth+1, fn))
		}
		return out
	case reflect.Map:
		return walkMap(v, top, depth, fn)
	}
	return v
}

// walkStruct copies a struct field by field; an embedded struct without a
// JSON name is at the level of its parent, as the encoder flattens it.
func walkStruct(v reflect.Value, top, near string, depth int, fn leaf) reflect.Value {
	out := reflect.New(v.Type()).Elem()
	out.Set(v)
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, inline := jsonField(f)
		if name == "-" {
			continue
		}
		ft, fn2, fd := top, name, depth+1
		if inline {
			fn2, fd = near, depth
		} else if depth == 0 {
			ft = name
		}
		out.Field(i).Set(walk(v.Field(i), ft, fn2, fd, fn))
	}
	return out
}

// walkMap copies a map; its keys name what is under them. Below the top
// level a key is data too (a goss rule's key is a command line), so it is
// rewritten like a string under the same name. Keys that become one keep
// the value of the first of them in sorted order, so the copy is the same
// at every run.
func walkMap(v reflect.Value, top string, depth int, fn leaf) reflect.Value {
	if v.IsNil() {
		return v
	}
	out := reflect.MakeMapWithSize(v.Type(), v.Len())
	keys := v.MapKeys()
	stringKeys := v.Type().Key().Kind() == reflect.String
	if stringKeys {
		slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(a.String(), b.String()) })
	}
	for _, k := range keys {
		val := v.MapIndex(k)
		name, t := "", top
		if stringKeys {
			name = k.String()
		}
		if depth == 0 {
			t = name
		} else if stringKeys {
			nk := reflect.New(k.Type()).Elem()
			nk.SetString(fn(t, name, name))
			if out.MapIndex(nk).IsValid() {
				continue
			}
			k = nk
		}
		out.SetMapIndex(k, walk(val, t, name, depth+1, fn))
	}
	return out
}

// walkRaw keeps an embedded JSON document when fn keeps its text whole,
// and replaces it by fn's answer as a JSON string otherwise.
func walkRaw(v reflect.Value, top, near string, fn leaf) reflect.Value {
	text := string(v.Bytes())
	got := fn(top, near, text)
	if got == text {
		return reflect.ValueOf(json.RawMessage(append([]byte(nil), v.Bytes()...))).Convert(v.Type())
	}
	quoted, err := json.Marshal(got)
	if err != nil {
		quoted = []byte(`null`)
	}
	return reflect.ValueOf(json.RawMessage(quoted)).Convert(v.Type())
}

// jsonField is a struct field's JSON name ("-" when it is not encoded),
// and whether it is an embedded struct the encoder flattens.
func jsonField(f reflect.StructField) (name string, inline bool) {
	tag := f.Tag.Get("json")
	name, _, _ = strings.Cut(tag, ",")
	if tag == "-" {
		return "-", false
	}
	if name == "" && f.Anonymous {
		t := f.Type
		if t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Kind() == reflect.Struct {
			return "", true
		}
	}
	if name == "" {
		name = f.Name
	}
	return name, false
}
