package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"

	"gopkg.in/yaml.v3"
)

// Encoding is the syntax a document arrived in.
type Encoding int

// Encodings.
const (
	EncodingJSON Encoding = iota + 1
	EncodingYAML
)

func (e Encoding) String() string {
	switch e {
	case EncodingJSON:
		return "json"
	case EncodingYAML:
		return "yaml"
	default:
		return "unknown"
	}
}

// Default limits applied by Limits.withDefaults to fields left zero.
const (
	DefaultMaxBytes = 1 << 20
	DefaultMaxDepth = 32
)

// Limits bound what a decoder accepts. Zero fields take the defaults.
type Limits struct {
	// MaxBytes is the largest input accepted.
	MaxBytes int
	// MaxDepth is the deepest nesting of objects and lists accepted.
	MaxDepth int
	// AllowYAMLAliases permits YAML anchors and aliases; they are refused by
	// default because a few aliases can expand into a huge document.
	AllowYAMLAliases bool
}

func (l Limits) withDefaults() Limits {
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxBytes
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = DefaultMaxDepth
	}
	return l
}

// DetectEncoding reports whether data is a JSON object or array (first
// non-blank byte '{' or '['), or otherwise YAML.
func DetectEncoding(data []byte) Encoding {
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') {
		return EncodingJSON
	}
	return EncodingYAML
}

// DecodeStrict decodes a JSON or YAML document into v. Unknown fields, wrong
// types, trailing data, input over the size or depth limit and (by default)
// YAML aliases are errors wrapping ErrBadRequest that name the offending field.
func DecodeStrict(data []byte, v any, limits Limits) (Encoding, error) {
	limits = limits.withDefaults()
	if len(data) > limits.MaxBytes {
		return 0, fmt.Errorf("%w: %w: %d bytes, the limit is %d", ErrBadRequest, ErrTooLarge, len(data), limits.MaxBytes)
	}
	enc := DetectEncoding(data)
	if enc == EncodingYAML {
		js, err := YAMLToJSON(data, limits)
		if err != nil {
			return enc, err
		}
		data = js
	} else if err := checkJSONDepth(data, limits.MaxDepth); err != nil {
		return enc, err
	}
	return enc, decodeJSONStrict(data, v)
}

// DecodeJSONStrict decodes JSON into v with the same strictness as DecodeStrict.
func DecodeJSONStrict(data []byte, v any) error {
	return decodeJSONStrict(data, v)
}

func decodeJSONStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return explainJSONError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return badRequest("unexpected data after the document")
	}
	return nil
}

func explainJSONError(err error) error {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return badRequest("invalid JSON at byte %d: %s", syntax.Offset, syntax.Error())
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			return badRequest("expected %s, got %s", describeType(typ.Type), typ.Value)
		}
		return badRequest("field %q: expected %s, got %s", field, describeType(typ.Type), typ.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return badRequest("unknown field %s", strings.TrimPrefix(err.Error(), "json: unknown field "))
	case errors.Is(err, io.EOF):
		return badRequest("empty document")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return badRequest("document ends early")
	default:
		return fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
}

func describeType(t reflect.Type) string {
	if t == nil {
		return "a value"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Pointer:
		return describeType(t.Elem())
	default:
		return t.String()
	}
}

// checkJSONDepth walks the tokens of a JSON document and fails when nesting
// exceeds max, before any allocation of the decoded value.
func checkJSONDepth(data []byte, max int) error {
	depth := 0
	inString := false
	escaped := false
	for _, b := range data {
		switch {
		case escaped:
			escaped = false
		case inString && b == '\\':
			escaped = true
		case b == '"':
			inString = !inString
		case inString:
		case b == '{' || b == '[':
			depth++
			if depth > max {
				return badRequest("document nests deeper than %d levels", max)
			}
		case b == '}' || b == ']':
			depth--
		}
	}
	return nil
}

// YAMLToJSON converts one YAML document to JSON, refusing aliases unless
// limits allow them, non-string keys, and nesting deeper than the limit.
func YAMLToJSON(data []byte, limits Limits) ([]byte, error) {
	limits = limits.withDefaults()
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, badRequest("empty document")
		}
		return nil, badRequest("invalid YAML: %s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, badRequest("more than one YAML document")
	}
	v, err := yamlValue(&doc, limits, 0, "")
	if err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

func yamlValue(n *yaml.Node, limits Limits, depth int, path string) (any, error) {
	if depth > limits.MaxDepth {
		return nil, badRequest("document nests deeper than %d levels", limits.MaxDepth)
	}
	where := func() string {
		if path == "" {
			return "document"
		}
		return fmt.Sprintf("field %q", path)
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, badRequest("empty document")
		}
		return yamlValue(n.Content[0], limits, depth, path)
	case yaml.AliasNode:
		if !limits.AllowYAMLAliases {
			return nil, badRequest("%s: YAML aliases are not accepted", where())
		}
		return yamlValue(n.Alias, limits, depth+1, path)
	case yaml.MappingNode:
		if n.Anchor != "" && !limits.AllowYAMLAliases {
			return nil, badRequest("%s: YAML anchors are not accepted", where())
		}
		out := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			if k.Kind == yaml.AliasNode || k.Tag == "!!merge" {
				return nil, badRequest("%s: YAML merge keys and aliased keys are not accepted", where())
			}
			if k.Kind != yaml.ScalarNode {
				return nil, badRequest("%s: keys must be strings", where())
			}
			key := k.Value
			if _, dup := out[key]; dup {
				return nil, badRequest("%s: key %q appears twice", where(), key)
			}
			child := key
			if path != "" {
				child = path + "." + key
			}
			cv, err := yamlValue(val, limits, depth+1, child)
			if err != nil {
				return nil, err
			}
			out[key] = cv
		}
		return out, nil
	case yaml.SequenceNode:
		if n.Anchor != "" && !limits.AllowYAMLAliases {
			return nil, badRequest("%s: YAML anchors are not accepted", where())
		}
		out := make([]any, 0, len(n.Content))
		for i, c := range n.Content {
			cv, err := yamlValue(c, limits, depth+1, fmt.Sprintf("%s[%d]", path, i))
			if err != nil {
				return nil, err
			}
			out = append(out, cv)
		}
		return out, nil
	case yaml.ScalarNode:
		var v any
		if err := n.Decode(&v); err != nil {
			return nil, badRequest("%s: %s", where(), err)
		}
		// Timestamps and binary stay as the text the author wrote.
		switch v.(type) {
		case string, bool, int, int64, uint64, float64, nil:
			return v, nil
		default:
			return n.Value, nil
		}
	default:
		return nil, badRequest("%s: unsupported YAML node", where())
	}
}
