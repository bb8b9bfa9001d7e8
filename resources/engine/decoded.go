package engine

import (
	"bytes"
	"fmt"
	"reflect"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/redact"
	"github.com/ccm-fleet/ccm/resources"
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
// it has "{{" or "${", or an escape that could spell one. Properties
// without are decoded once, from raw (Spec.Decoded); properties with are
// expanded first, from their map.
func MayHoldTemplate(raw []byte) bool {
	return bytes.Contains(raw, []byte("{{")) || bytes.Contains(raw, []byte("${")) || bytes.Contains(raw, []byte(`\u`))
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
	// marked so or when a value holds sensitive data.
	env := s.opts.Env
	sensitive := c.Sensitive || env.Sensitive(nil, stringsOf(reflect.ValueOf(props), nil))
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
		for it := v.MapRange(); it.Next(); {
			out = stringsOf(it.Value(), out)
		}
	case reflect.String:
		out = append(out, v.String())
	}
	return out
}
