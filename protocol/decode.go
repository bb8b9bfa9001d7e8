package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strings"
	"time"
	"unicode/utf8"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"
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

// Limits bound what a decoder accepts. Zero fields take the defaults. YAML
// anchors and aliases are always refused: a few aliases can expand into a
// huge document.
type Limits struct {
	// MaxBytes is the largest input accepted.
	MaxBytes int
	// MaxDepth is the deepest nesting of objects and lists accepted.
	MaxDepth int
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

// strictOptions are the rules of every decode. Each is set explicitly, the
// defaults of github.com/go-json-experiment/json included, so that the rules
// do not depend on which defaults a version has:
//   - member names match exactly: encoding/json folds case (Unicode folding
//     included, so "ſ" matches "s" and the Kelvin sign "K" matches "k"), and
//     a key the policy does not see must not reach the engine;
//   - a member the target does not have is an error;
//   - a name twice in one object is an error;
//   - invalid UTF-8 is an error, not replaced with U+FFFD;
//   - a time.Duration is integer nanoseconds, as encoding/json writes it
//     (v2 has no default representation for it).
//
// Numbers decoded into `any` stay float64, as with encoding/json.
var strictOptions = jsonv2.JoinOptions(
	jsonv2.DefaultOptionsV2(),
	jsonv2.MatchCaseInsensitiveNames(false),
	jsonv2.RejectUnknownMembers(true),
	jsontext.AllowDuplicateNames(false),
	jsontext.AllowInvalidUTF8(false),
	jsonv1.FormatDurationAsNano(true),
)

// configOptions are strictOptions for files people write: a time.Duration
// may also be a duration string ("30s").
var configOptions = jsonv2.JoinOptions(strictOptions, jsonv2.WithUnmarshalers(jsonv2.UnmarshalFromFunc(unmarshalDuration)))

// DecodeConfig is DecodeStrict for configuration files people write: a
// time.Duration may be a duration string such as "30s" (or integer
// nanoseconds). Every other rule is DecodeStrict's.
func DecodeConfig(data []byte, v any, limits Limits) (Encoding, error) {
	return decodeDocument(data, v, limits, configOptions)
}

// unmarshalDuration reads a time.Duration from integer nanoseconds or a
// duration string; null leaves it as it is.
func unmarshalDuration(dec *jsontext.Decoder, d *time.Duration) error {
	val, err := dec.ReadValue()
	if err != nil {
		return err
	}
	if val.Kind() == 'n' {
		return nil
	}
	v, err := parseDuration(val)
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// tolerantOptions are strictOptions that ignore unknown members, for files
// another program owns (see DecodeJSONTolerant).
var tolerantOptions = jsonv2.JoinOptions(strictOptions, jsonv2.RejectUnknownMembers(false))

// DetectEncoding reports whether data is a JSON object or array, or
// otherwise YAML. JSON starts (after blanks) with '[', or with '{' followed
// by a quoted key or '}'; `{users: [...]}` is YAML in flow style.
func DetectEncoding(data []byte) Encoding {
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	switch {
	case len(trimmed) == 0:
		return EncodingYAML
	case trimmed[0] == '[':
		return EncodingJSON
	case trimmed[0] == '{':
		rest := bytes.TrimLeft(trimmed[1:], " \t\r\n")
		if len(rest) == 0 || rest[0] == '"' || rest[0] == '}' {
			return EncodingJSON
		}
	}
	return EncodingYAML
}

// DecodeStrict decodes a JSON or YAML document into v. Member names match
// exactly (case included); unknown members, duplicate names, invalid UTF-8,
// wrong types, trailing data, input over the size or depth limit and YAML
// anchors and aliases are bad requests (*Error, matching ErrBadRequest)
// whose Field is the offending key's path as written.
func DecodeStrict(data []byte, v any, limits Limits) (Encoding, error) {
	return decodeDocument(data, v, limits, strictOptions)
}

func decodeDocument(data []byte, v any, limits Limits, opts jsonv2.Options) (Encoding, error) {
	limits = limits.withDefaults()
	if err := checkSize(data, limits.MaxBytes); err != nil {
		return 0, err
	}
	enc := DetectEncoding(data)
	if enc == EncodingYAML {
		js, err := YAMLToJSON(data, limits)
		if err != nil {
			return enc, err
		}
		return enc, decodeJSON(js, v, limits.MaxDepth, opts)
	}
	return enc, decodeJSON(data, v, limits.MaxDepth, opts)
}

// DecodeJSONStrict decodes JSON into v with the rules of DecodeStrict, at
// most DefaultMaxDepth deep (its caller bounds the size).
func DecodeJSONStrict(data []byte, v any) error {
	return decodeJSON(data, v, DefaultMaxDepth, strictOptions)
}

// DecodeJSONTolerant is DecodeJSONStrict that ignores members v does not
// have, for files written by another program whose schema grows without
// us (a nats CLI context). Names still match exactly; duplicates, invalid
// UTF-8 and the limits are still refused.
func DecodeJSONTolerant(data []byte, v any, limits Limits) error {
	limits = limits.withDefaults()
	if err := checkSize(data, limits.MaxBytes); err != nil {
		return err
	}
	return decodeJSON(data, v, limits.MaxDepth, tolerantOptions)
}

func checkSize(data []byte, maxBytes int) error {
	if len(data) > maxBytes {
		return &Error{Code: CodeBadRequest, Message: fmt.Sprintf("%s: %d bytes, the limit is %d", ErrTooLarge, len(data), maxBytes), cause: ErrTooLarge}
	}
	return nil
}

func decodeJSON(data []byte, v any, maxDepth int, opts jsonv2.Options) error {
	if len(bytes.TrimLeft(data, " \t\r\n")) == 0 {
		return badRequest("empty document")
	}
	if err := checkJSONDepth(data, maxDepth); err != nil {
		return err
	}
	decodes.Add(1)
	if err := jsonv2.Unmarshal(data, v, opts); err != nil {
		return explainJSONError(data, err)
	}
	return nil
}

// explainJSONError turns a decoding error into a bad request naming the
// key as written in data.
func explainJSONError(data []byte, err error) error {
	var sem *jsonv2.SemanticError
	var syn *jsontext.SyntacticError
	switch {
	case errors.As(err, &sem):
		var inner *Error
		if errors.As(sem.Err, &inner) {
			// A type's own decoder (UnmarshalJSON) decoded strictly too.
			return inner.Within(pointerPath(data, sem.JSONPointer))
		}
		if errors.Is(sem.Err, jsonv2.ErrUnknownName) {
			parent, key := pointerPath(data, sem.JSONPointer.Parent()), sem.JSONPointer.LastToken()
			return unknownKeyError(parent, key)
		}
		return fieldError(pointerPath(data, sem.JSONPointer), "%s", semanticReason(sem))
	case errors.As(err, &syn):
		switch {
		case errors.Is(syn.Err, jsontext.ErrDuplicateName):
			parent, key := pointerPath(data, syn.JSONPointer.Parent()), syn.JSONPointer.LastToken()
			return keyError(parent, key, fmt.Sprintf("key %q appears twice", key))
		case errors.Is(syn.Err, io.ErrUnexpectedEOF):
			return badRequest("document ends early")
		case syn.JSONPointer == "" && syn.ByteOffset >= firstValueEnd(data):
			return badRequest("unexpected data after the document")
		}
		return fieldError(pointerPath(data, syn.JSONPointer), "invalid JSON at byte %d: %s", syn.ByteOffset, syn.Err)
	default:
		return fieldError("", "%s", err)
	}
}

// firstValueEnd returns the offset where the JSON value at the start of
// data ends (len(data)+1 when it does not), so that an error past it is
// about trailing data.
func firstValueEnd(data []byte) int64 {
	dec := jsontext.NewDecoder(bytes.NewReader(data), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	if _, err := dec.ReadValue(); err != nil {
		return int64(len(data)) + 1
	}
	return dec.InputOffset()
}

// semanticReason words a type mismatch or a value a type refused.
func semanticReason(e *jsonv2.SemanticError) string {
	if e.GoType == reflect.TypeFor[time.Time]() {
		return fmt.Sprintf("expected an RFC 3339 time such as \"2025-01-02T15:04:05Z\", got %s", kindName(e.JSONKind))
	}
	if e.Err != nil {
		return e.Err.Error()
	}
	return fmt.Sprintf("expected %s, got %s", describeType(e.GoType), kindName(e.JSONKind))
}

func kindName(k jsontext.Kind) string {
	switch k {
	case 'n':
		return "null"
	case 't', 'f':
		return "bool"
	case '"':
		return "string"
	case '0':
		return "number"
	case '{':
		return "object"
	case '[':
		return "array"
	default:
		return "a value"
	}
}

// pointerPath renders a JSON Pointer into data as the author would write
// the path: `signers[0].colour`. Whether a token is an index or a key is
// read from data; it is only done for errors.
func pointerPath(data []byte, ptr jsontext.Pointer) string {
	if ptr == "" {
		return ""
	}
	kinds := containerKinds(data, ptr)
	var b strings.Builder
	i := 0
	for tok := range ptr.Tokens() {
		if i < len(kinds) && kinds[i] == '[' {
			b.WriteString("[" + tok + "]")
		} else {
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(tok)
		}
		i++
	}
	return b.String()
}

// containerKinds walks data to ptr and returns the kind ('{' or '[') of
// each container on the way; nil when ptr is not reached.
func containerKinds(data []byte, ptr jsontext.Pointer) []jsontext.Kind {
	dec := jsontext.NewDecoder(bytes.NewReader(data), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	for {
		if dec.StackPointer() == ptr {
			kinds := make([]jsontext.Kind, 0, dec.StackDepth())
			for i := 1; i <= dec.StackDepth(); i++ {
				k, _ := dec.StackIndex(i)
				kinds = append(kinds, k)
			}
			return kinds
		}
		if _, err := dec.ReadToken(); err != nil {
			return nil
		}
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

// checkJSONDepth walks the bytes of a JSON document and fails when nesting
// exceeds max, before any allocation of the decoded value.
func checkJSONDepth(data []byte, max int) error {
	depth := 0
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case '"':
			i, _ = skipString(data, i)
		case '{', '[':
			depth++
			if depth > max {
				return badRequest("document nests deeper than %d levels", max)
			}
		case '}', ']':
			depth--
		}
	}
	return nil
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

// YAMLToJSON converts one YAML document to JSON, refusing invalid UTF-8
// (before yaml.v3 sees it), anchors and aliases, merge keys, keys that are
// not strings, a key twice in one mapping, more than one document and
// nesting deeper than the limit.
func YAMLToJSON(data []byte, limits Limits) ([]byte, error) {
	limits = limits.withDefaults()
	if err := checkSize(data, limits.MaxBytes); err != nil {
		return nil, err
	}
	if !utf8.Valid(data) {
		return nil, invalidUTF8(data)
	}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, badRequest("empty document")
		}
		if line, col, problem, ok := yamlFault(data); ok {
			return nil, wrapped(err, "", "invalid YAML at line %d, column %d: %s", line, col, problem)
		}
		return nil, wrapped(err, "", "invalid YAML (%v)", err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, badRequest("more than one YAML document")
	}
	v, err := yamlValue(&doc, limits, 0, "")
	if err != nil {
		return nil, err
	}
	js, err := json.Marshal(v)
	if err != nil {
		return nil, badRequest("cannot convert the YAML document to JSON: %s", err)
	}
	return js, nil
}

// invalidUTF8 names the line and byte of the first invalid UTF-8 in data.
func invalidUTF8(data []byte) *Error {
	off := invalidAt(string(data))
	line := 1 + bytes.Count(data[:off], []byte{'\n'})
	return badRequest("invalid UTF-8 at line %d (byte %d)", line, off)
}

func yamlValue(n *yaml.Node, limits Limits, depth int, path string) (any, error) {
	if depth > limits.MaxDepth {
		return nil, badRequest("document nests deeper than %d levels", limits.MaxDepth)
	}
	if n.Anchor != "" {
		return nil, fieldError(path, "YAML anchors are not accepted (line %d)", n.Line)
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, badRequest("empty document")
		}
		return yamlValue(n.Content[0], limits, depth, path)
	case yaml.AliasNode:
		return nil, fieldError(path, "YAML aliases are not accepted (line %d)", n.Line)
	case yaml.MappingNode:
		out := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			switch {
			case k.Kind == yaml.AliasNode || k.Anchor != "":
				return nil, fieldError(path, "YAML aliases and anchors are not accepted (line %d)", k.Line)
			case k.Tag == "!!merge":
				return nil, fieldError(path, "YAML merge keys are not accepted (line %d)", k.Line)
			case k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str":
				return nil, fieldError(path, "keys must be strings, got %s (line %d)", yamlKind(k), k.Line)
			}
			key := k.Value
			if _, dup := out[key]; dup {
				return nil, keyError(path, key, fmt.Sprintf("key %q appears twice (line %d)", key, k.Line))
			}
			cv, err := yamlValue(val, limits, depth+1, joinPath(path, key))
			if err != nil {
				return nil, err
			}
			out[key] = cv
		}
		return out, nil
	case yaml.SequenceNode:
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
			return nil, scalarError(path, err)
		}
		// Timestamps and binary stay as the text the author wrote.
		switch x := v.(type) {
		case float64:
			if math.IsInf(x, 0) || math.IsNaN(x) {
				return nil, fieldError(path, "%s is not a number JSON can hold", n.Value)
			}
			return v, nil
		case string, bool, int, int64, uint64, nil:
			return v, nil
		default:
			return n.Value, nil
		}
	default:
		return nil, fieldError(path, "unsupported YAML node (line %d)", n.Line)
	}
}

// yamlKind names a key's YAML kind or tag for messages.
func yamlKind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a sequence"
	default:
		return strings.TrimPrefix(n.ShortTag(), "!!")
	}
}

// scalarError is the bad request for a YAML scalar at path that does not
// decode: the decoder's own reasons when it gives them one by one
// (yaml.TypeError), else its error as it renders it.
func scalarError(path string, err error) *Error {
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		return wrapped(err, path, "%s", strings.Join(te.Errors, "; "))
	}
	return wrapped(err, path, "%v", err)
}
