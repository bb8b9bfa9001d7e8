package protocol

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"unicode/utf8"
)

// EncodeJSON is json.Marshal without its HTML escaping: <, > and & stay
// as written instead of becoming \u003c, \u003e and \u0026 (JSON needs
// no such escape). Requests are encoded with it: their bytes are what an
// agent decodes and what a signature covers, and an agent decodes a
// property with an escape more carefully (see engine.MayHoldTemplate).
func EncodeJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// checkText refuses a string in v, a map key included, that is not valid
// UTF-8, naming where it is (its path: "content", "health_checks[0].command").
// It follows maps, slices, arrays, pointers and interfaces, at most
// maxTextDepth deep (a value that refers to itself is refused, not
// followed for ever); byte slices are not text (JSON writes them in
// base64) and are left alone.
func checkText(v any) error {
	return checkTextValue(reflect.ValueOf(v), "", 0)
}

// maxTextDepth bounds how deep checkText follows a value, as deep as
// encoding/json follows one before it looks for a cycle.
const maxTextDepth = 1000

func checkTextValue(v reflect.Value, path string, depth int) error {
	if depth > maxTextDepth {
		// Not fieldError: the path would be a thousand names long.
		return badRequest("nested more than %d levels deep (a value that contains itself?)", maxTextDepth)
	}
	switch v.Kind() {
	case reflect.String:
		if s := v.String(); !utf8.ValidString(s) {
			return fieldError(path, "not valid UTF-8 at byte %d: JSON carries text only", invalidAt(s))
		}
	case reflect.Interface, reflect.Pointer:
		if !v.IsNil() {
			return checkTextValue(v.Elem(), path, depth+1)
		}
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return nil
		}
		for i := 0; i < v.Len(); i++ {
			if err := checkTextValue(v.Index(i), joinPath(path, "["+strconv.Itoa(i)+"]"), depth+1); err != nil {
				return err
			}
		}
	case reflect.Map:
		iter := v.MapRange()
		for iter.Next() {
			k := iter.Key()
			if k.Kind() == reflect.String && !utf8.ValidString(k.String()) {
				return fieldError(path, "key %q is not valid UTF-8: JSON carries text only", k.String())
			}
			if err := checkTextValue(iter.Value(), joinPath(path, k.String()), depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// invalidAt is the offset of the first invalid UTF-8 sequence in s.
func invalidAt(s string) int {
	i := 0
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size <= 1 {
			break
		}
		i += size
	}
	return i
}
