package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/redact"
)

// DecodeJSON decodes the JSON object raw, a resource's properties as a
// request carries them, straight into the type's properties, with the
// rules and the messages of Decode (an unknown property or a wrong type
// names the property; every error wraps resources.ErrInvalid). It sets no
// default and does not validate: Prepare does, once templates are
// resolved.
func DecodeJSON(t resources.Type, raw []byte) (resources.Properties, error) {
	p := t.NewProperties()
	if err := protocol.DecodeJSONStrict(raw, p); err != nil {
		return nil, invalidProperties(err)
	}
	return p, nil
}

// MayHoldTemplate reports whether the JSON text raw may hold a template:
// it has "{{" or "${" as written, or a \u escape spelling '{' or '$'
// (every opener, "{{" and "${", is made of those two characters; an
// escape of any other, such as \u0026 for '&', cannot hide one). It errs
// on the side of a template: an escape it cannot read counts as one.
// Properties without are decoded once, from raw (Spec.Decoded);
// properties with are expanded first, from their map.
func MayHoldTemplate(raw []byte) bool {
	if bytes.Contains(raw, []byte("{{")) || bytes.Contains(raw, []byte("${")) {
		return true
	}
	for i := bytes.IndexByte(raw, '\\'); i >= 0; {
		if i+1 < len(raw) && raw[i+1] != 'u' && raw[i+1] != 'U' {
			i += 2 // a two-byte escape: \\, \", \n...
		} else {
			r, ok := hex4(raw[min(i+2, len(raw)):])
			if !ok || r == '{' || r == '$' {
				return true
			}
			i += 6
		}
		next := bytes.IndexByte(raw[min(i, len(raw)):], '\\')
		if next < 0 {
			break
		}
		i += next
	}
	return false
}

// hex4 reads the four hex digits a \u escape starts with b.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// ValueMayHoldTemplate is MayHoldTemplate for properties already decoded
// into a map, as a manifest plans them: whether a string in v, a map key
// (goss rules are keyed by templates) or a value, has "{{" or "${". A
// value of a kind templates are not expanded in counts as one that may.
func ValueMayHoldTemplate(v any) bool {
	switch t := v.(type) {
	case string:
		return strings.Contains(t, "{{") || strings.Contains(t, "${")
	case map[string]any:
		for k, x := range t {
			if ValueMayHoldTemplate(k) || ValueMayHoldTemplate(x) {
				return true
			}
		}
		return false
	case []any:
		for _, x := range t {
			if ValueMayHoldTemplate(x) {
				return true
			}
		}
		return false
	case nil, bool, int, int64, uint64, float64:
		return false
	default:
		return true
	}
}

// DecodeMap decodes props, a resource's properties with their templates
// resolved (or none), into the type's properties, with the rules and
// messages of Decode. Like DecodeJSON it sets no default and does not
// validate: Prepare does, for Spec.Decoded.
func DecodeMap(t resources.Type, props map[string]any) (resources.Properties, error) {
	raw, err := json.Marshal(props)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", resources.ErrInvalid, err)
	}
	return DecodeJSON(t, raw)
}

// CloneProperties returns a deep copy of p: its structs, pointers, lists
// and maps copied, nothing shared with p. Prepare and the providers may
// change the properties they are given (the default ensure, the
// sensitive mark), so properties decoded once and kept for later runs are
// handed to each run as a copy.
func CloneProperties(p resources.Properties) resources.Properties {
	return cloneValue(reflect.ValueOf(p)).Interface().(resources.Properties)
}

// cloneValue is a deep copy of v (JSON-shaped values: no cycles).
func cloneValue(v reflect.Value) reflect.Value {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return v
		}
		c := reflect.New(v.Type().Elem())
		c.Elem().Set(cloneValue(v.Elem()))
		return c
	case reflect.Interface:
		if v.IsNil() {
			return v
		}
		c := reflect.New(v.Type()).Elem()
		c.Set(cloneValue(v.Elem()))
		return c
	case reflect.Struct:
		c := reflect.New(v.Type()).Elem()
		c.Set(v)
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				c.Field(i).Set(cloneValue(v.Field(i)))
			}
		}
		return c
	case reflect.Slice:
		if v.IsNil() {
			return v
		}
		c := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		for i := range v.Len() {
			c.Index(i).Set(cloneValue(v.Index(i)))
		}
		return c
	case reflect.Array:
		c := reflect.New(v.Type()).Elem()
		for i := range v.Len() {
			c.Index(i).Set(cloneValue(v.Index(i)))
		}
		return c
	case reflect.Map:
		if v.IsNil() {
			return v
		}
		c := reflect.MakeMapWithSize(v.Type(), v.Len())
		for it := v.MapRange(); it.Next(); {
			c.SetMapIndex(it.Key(), cloneValue(it.Value()))
		}
		return c
	default:
		return v
	}
}

// prepareDecoded is Prepare for properties decoded from the request's
// bytes, none a template: the same checks, secrets and choices, without
// expansion or a second decode.
func (s *Session) prepareDecoded(t resources.Type, props resources.Properties) (*Prepared, error) {
	c := props.Common()
	label := t.Name()
	if c.Name != "" {
		label = t.Name() + "#" + c.Name
	}
	// As secrets does for properties no template touched: sensitive when
	// marked so or when a value holds sensitive data. With no data marked
	// sensitive no value can hold it (and no template read it), so the
	// strings are gathered only when some is.
	env := s.opts.Env
	sensitive := c.Sensitive || (len(env.SensitiveKeys()) > 0 && env.Sensitive(nil, stringsOf(reflect.ValueOf(props), nil)))
	secrets := redact.New(label, sensitive)
	if sensitive {
		secrets.AddValues(env.SensitiveValues()...)
	}
	if err := validate(t, props); err != nil {
		return nil, redact.Error(fmt.Errorf("%s: %w", label, err), secrets)
	}
	markRegistrations(env, props, nil, nil)
	return s.prepareValid(t, props, label, secrets)
}

// stringsOf appends every string held in v (struct fields, lists, maps
// and pointers, followed) to out, as a list templates.Env.Sensitive reads.
func stringsOf(v reflect.Value, out []any) []any {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			out = stringsOf(v.Elem(), out)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				out = stringsOf(v.Field(i), out)
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			out = stringsOf(v.Index(i), out)
		}
	case reflect.Map:
		// Keys count, as they do for properties in a map: goss rules are
		// keyed by values.
		for it := v.MapRange(); it.Next(); {
			out = stringsOf(it.Key(), out)
			out = stringsOf(it.Value(), out)
		}
	case reflect.String:
		out = append(out, v.String())
	}
	return out
}
