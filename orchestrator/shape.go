package orchestrator

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// HostPlaceholder stands for a host's identity in a Group's Message.
const HostPlaceholder = "<host>"

// Shape bounds: an identity shorter than minShapeIdentity characters and
// fact values shorter than minShapeValue are never replaced (they would
// match too much), and at most maxShapeFacts string values of a host are
// looked for, the longest first.
const (
	minShapeIdentity = 3
	minShapeValue    = 2
	maxShapeFacts    = 200
	maxShapeDepth    = 4
)

// shaper turns one host's messages into their shape: the message with
// each whole-token occurrence of the host's identity replaced by
// HostPlaceholder and of the host's fact values by <facts.KEY>, so hosts
// whose messages differ only by text that came from their own identity or
// facts (a templated path such as /srv/{{ lookup('facts.role') }}/{{
// lookup('facts.identity') }}/motd expanded on each host) fall into one
// group: 300 hosts failing the same way make one group of 300, not 300
// groups of one.
//
// A value is replaced only where it stands as a whole token, that is where
// the characters on either side are not letters, digits, '-' or '_' (so
// sim-0001 is replaced in /srv/sim-0001/motd and in sim-0001.example.com
// but not in sim-00012). The identity goes first, then fact values from
// the longest; identities shorter than 3 characters, values shorter than 2
// and facts that are not strings are left alone. The facts
// are those discovery saw (the registry keeps flat facts; a broadcast
// gets them all); without them only the identity is replaced.
type shaper struct {
	identity string
	values   []shapeValue
}

// shapeValue is one fact value to look for and what stands for it.
type shapeValue struct{ value, placeholder string }

// newShaper prepares the shape of identity's messages given its facts.
func newShaper(identity string, facts map[string]any) *shaper {
	s := &shaper{identity: identity}
	var walk func(prefix string, m map[string]any, depth int)
	walk = func(prefix string, m map[string]any, depth int) {
		for k, v := range m {
			key := k
			if prefix != "" {
				key = prefix + "." + k
			}
			var text string
			switch x := v.(type) {
			case string:
				text = x
			case map[string]any:
				if depth < maxShapeDepth {
					walk(key, x, depth+1)
				}
				continue
			default: // numbers and booleans: too likely to be in a message by chance
				continue
			}
			if len(text) >= minShapeValue && text != identity && !strings.ContainsAny(text, "\n") {
				s.values = append(s.values, shapeValue{value: text, placeholder: "<facts." + key + ">"})
			}
		}
	}
	walk("", facts, 0)
	s.sortValues()
	return s
}

// newTemplateShaper is the shaper of identity for the named facts only
// (dotted keys, as templates name them), numbers and booleans included:
// for text where a fact value turns up only because a template put it
// there (see DiffGroups).
func newTemplateShaper(identity string, facts map[string]any, keys []string) *shaper {
	s := &shaper{identity: identity}
	for _, k := range keys {
		v, ok := walkFacts(facts, k)
		if !ok {
			continue
		}
		var text string
		switch t := v.(type) {
		case string:
			text = t
		case float64, int, int64, bool, json.Number:
			text = fmt.Sprint(t)
		default:
			continue
		}
		if len(text) >= minShapeValue && text != identity {
			s.values = append(s.values, shapeValue{value: text, placeholder: "<facts." + k + ">"})
		}
	}
	s.sortValues()
	return s
}

// sortValues orders the values longest first, so that a value holding
// another is replaced whole, and bounds them.
func (s *shaper) sortValues() {
	slices.SortFunc(s.values, func(a, b shapeValue) int {
		return cmp.Or(cmp.Compare(len(b.value), len(a.value)), strings.Compare(a.value, b.value), strings.Compare(a.placeholder, b.placeholder))
	})
	if len(s.values) > maxShapeFacts {
		s.values = s.values[:maxShapeFacts]
	}
}

// shape returns message's shape (see shaper).
func (s *shaper) shape(message string) string {
	if len(s.identity) >= minShapeIdentity {
		message = replaceToken(message, s.identity, HostPlaceholder)
	}
	for _, v := range s.values {
		message = replaceToken(message, v.value, v.placeholder)
	}
	return message
}

// replaceToken replaces each occurrence of token in message that stands as
// a whole token with repl.
func replaceToken(message, token, repl string) string {
	if !strings.Contains(message, token) {
		return message
	}
	var b strings.Builder
	from := 0
	for {
		i := strings.Index(message[from:], token)
		if i < 0 {
			break
		}
		i += from
		end := i + len(token)
		b.WriteString(message[from:i])
		if (i == 0 || !tokenByte(message[i-1])) && (end == len(message) || !tokenByte(message[end])) {
			b.WriteString(repl)
		} else {
			b.WriteString(token)
		}
		from = end
	}
	b.WriteString(message[from:])
	return b.String()
}

// tokenByte reports whether c can be part of a host identity token.
func tokenByte(c byte) bool {
	return c == '-' || c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// ShapeOf returns message with the host's identity and string fact values
// replaced as report groups have them (see shaper): "file#/srv/web1/motd"
// from web1 is "file#/srv/<host>/motd".
func ShapeOf(message, identity string, facts map[string]any) string {
	return newShaper(identity, facts).shape(message)
}
