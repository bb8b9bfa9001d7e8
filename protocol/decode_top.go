package protocol

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
)

// decodeTopStrict decodes the JSON object data into v, a pointer to a
// struct whose fields are all known (no field of v is itself decoded
// strictly: lists, maps and nested objects take what they can), refusing
// keys of the object that are not among fields. It accepts what
// DecodeStrict accepts and words its errors the same way, in fewer passes
// over the document: one byte scan (depth, top-level keys, trailing data)
// and one json.Unmarshal, where DecodeStrict adds a json.Decoder pass.
// Input that is not a JSON object (YAML, say) goes to DecodeStrict.
//
// It exists for the documents read in bulk: replies (one per host per
// run), registry entries and discovery announcements.
func decodeTopStrict(data []byte, v any, limits Limits, fields []string) error {
	limits = limits.withDefaults()
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(data) > limits.MaxBytes || len(trimmed) == 0 || trimmed[0] != '{' {
		_, err := DecodeStrict(data, v, limits)
		return err
	}
	end, keys, err := scanObject(data, limits.MaxDepth)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data[:end], v); err != nil {
		return explainJSONError(err)
	}
	for _, k := range keys {
		if !knownField(k, fields) {
			return badRequest("unknown field %q", k)
		}
	}
	if len(bytes.TrimLeft(data[end:], " \t\r\n")) > 0 {
		return badRequest("unexpected data after the document")
	}
	return nil
}

// scanObject walks the JSON value at the start of data (after blanks) as
// checkJSONDepth does, and returns where it ends and the keys of its top
// level (unquoted). It does not validate: json.Unmarshal does, on
// data[:end]. Strings are skipped with bytes.IndexByte, so the walk costs
// little next to the decoding.
func scanObject(data []byte, maxDepth int) (end int, keys []string, err error) {
	depth := 0
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case '"':
			start := i
			var escaped bool
			i, escaped = skipString(data, i)
			if depth != 1 {
				continue
			}
			// A string at depth 1 followed by a colon is a key.
			j := i + 1
			for j < len(data) && isBlank(data[j]) {
				j++
			}
			if j < len(data) && data[j] == ':' {
				keys = append(keys, unquoteKey(data[start:i+1], escaped))
				i = j
			}
		case '{', '[':
			depth++
			if depth > maxDepth {
				return 0, nil, badRequest("document nests deeper than %d levels", maxDepth)
			}
		case '}', ']':
			depth--
			if depth == 0 {
				return i + 1, keys, nil
			}
		}
	}
	return len(data), keys, nil
}

// skipString returns the index of the quote closing the string opening at
// data[i] (len(data) when unterminated) and whether it holds escapes.
func skipString(data []byte, i int) (int, bool) {
	escaped := false
	for i++; i < len(data); {
		q := bytes.IndexByte(data[i:], '"')
		if q < 0 {
			return len(data), escaped
		}
		q += i
		// The quote is escaped when an odd number of backslashes precede it.
		n := 0
		for k := q - 1; k >= i && data[k] == '\\'; k-- {
			n++
		}
		if !escaped && bytes.IndexByte(data[i:q], '\\') >= 0 {
			escaped = true
		}
		if n%2 == 0 {
			return q, escaped
		}
		i = q + 1
	}
	return len(data), escaped
}

func isBlank(b byte) bool { return b == ' ' || b == '\t' || b == '\r' || b == '\n' }

// unquoteKey returns a quoted key's text.
func unquoteKey(quoted []byte, escaped bool) string {
	if !escaped {
		return string(quoted[1 : len(quoted)-1])
	}
	var s string
	if err := json.Unmarshal(quoted, &s); err != nil {
		return string(quoted[1 : len(quoted)-1])
	}
	return s
}

// knownField reports whether encoding/json would decode key into one of
// fields: an exact match, or one that differs only in case.
func knownField(key string, fields []string) bool {
	for _, f := range fields {
		if key == f || strings.EqualFold(key, f) {
			return true
		}
	}
	return false
}

// jsonFields lists the JSON names of the fields of struct type t, the
// fields of embedded structs included, as encoding/json names them.
func jsonFields(t reflect.Type) []string {
	var out []string
	for f := range t.Fields() {
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			out = append(out, jsonFields(f.Type)...)
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, name)
	}
	return out
}
