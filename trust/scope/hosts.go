package scope

import (
	"fmt"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/ccm-fleet/ccm/protocol"
)

// HostEntries are a scope's hosts entries: --where terms and select
// expressions, each a string ("role=web", "select: role=web or
// role=db"). A policy file may also write a select expression as the
// mapping {select: EXPR}, which is what YAML makes of an unquoted
// `- select: role=web or role=db`; it is read as the string
// "select: EXPR". Nothing else is accepted.
type HostEntries []string

// UnmarshalJSONFrom reads a list of strings and {"select": EXPR}
// mappings, strictly: any other key, value or type is an error naming
// the entry.
func (h *HostEntries) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	switch dec.PeekKind() {
	case 'n':
		_, err := dec.ReadToken()
		*h = nil
		return err
	case '[':
	default:
		return hostsError("expected a list of --where terms and select: entries")
	}
	if _, err := dec.ReadToken(); err != nil {
		return err
	}
	out := HostEntries{}
	for i := 0; dec.PeekKind() != ']'; i++ {
		switch dec.PeekKind() {
		case '"':
			tok, err := dec.ReadToken()
			if err != nil {
				return err
			}
			out = append(out, tok.String()) // before the next call voids tok
		case '{':
			expr, err := readSelectMapping(dec, i)
			if err != nil {
				return err
			}
			out = append(out, selectPrefix+" "+expr)
		case 0:
			_, err := dec.ReadToken()
			return err
		default:
			return hostsError("item %d: expected a --where term or select: EXPR, got %s", i, kindName(dec.PeekKind()))
		}
	}
	if _, err := dec.ReadToken(); err != nil {
		return err
	}
	*h = out
	return nil
}

// readSelectMapping reads {"select": "EXPR"}, item i of the list.
func readSelectMapping(dec *jsontext.Decoder, i int) (string, error) {
	if _, err := dec.ReadToken(); err != nil {
		return "", err
	}
	if dec.PeekKind() != '"' {
		return "", hostsError("item %d: a mapping must be {select: EXPR}", i)
	}
	tok, err := dec.ReadToken()
	if err != nil {
		return "", err
	}
	if name := tok.String(); name != "select" {
		return "", hostsError("unknown key %q: a mapping must be {select: EXPR}", name)
	}
	if dec.PeekKind() != '"' {
		return "", hostsError("expected an expression (a string), got %s", kindName(dec.PeekKind()))
	}
	tok, err = dec.ReadToken()
	if err != nil {
		return "", err
	}
	expr := tok.String()
	if dec.PeekKind() != '}' {
		return "", hostsError("item %d: a mapping must be {select: EXPR} and nothing else", i)
	}
	_, err = dec.ReadToken()
	return expr, err
}

func hostsError(format string, args ...any) error {
	return &protocol.Error{Code: protocol.CodeBadRequest, Message: fmt.Sprintf(format, args...)}
}

func kindName(k jsontext.Kind) string {
	switch k {
	case '"':
		return "a string"
	case '0':
		return "a number"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	case '{':
		return "a mapping"
	case '[':
		return "a list"
	}
	return "the end"
}
