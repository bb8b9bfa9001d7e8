package protocol

import (
	"errors"

	goccy "github.com/goccy/go-yaml"
	goccyparser "github.com/goccy/go-yaml/parser"
)

// yamlFault is where a YAML document that yaml.v3 refused is wrong, and
// what is wrong there; ok is false when it cannot be told.
//
// yaml.v3 names the line where the enclosing block started (its parser's
// context mark) rather than the line of the fault (the problem mark):
// a key indented one space short on line 7 of a manifest is "yaml: line 3:
// did not find expected key", line 3 being the `- file:` the mapping hangs
// from. The document is refused either way; to name the right line, it is
// parsed again (bounded by the same size limit, already checked) by a
// parser that keeps the offending token's position, and only that
// position and message are taken from it. When that parser accepts the
// document, yaml.v3's own error is all there is.
//
// The second parser recurses once per level of nesting, so a document
// nesting flow collections deeper than maxFaultDepth is not given to it;
// a panic in it tells nothing either.
func yamlFault(data []byte) (line, column int, problem string, ok bool) {
	if flowDepth(data) > maxFaultDepth {
		return 0, 0, "", false
	}
	defer func() {
		if recover() != nil {
			line, column, problem, ok = 0, 0, "", false
		}
	}()
	_, err := goccyparser.ParseBytes(data, 0)
	var se *goccy.SyntaxError
	if !errors.As(err, &se) || se.Token == nil || se.Token.Position == nil || se.Token.Position.Line <= 0 {
		return 0, 0, "", false
	}
	return se.Token.Position.Line, se.Token.Position.Column, se.Message, true
}

// maxFaultDepth bounds the flow nesting of a document yamlFault parses
// again; documents nest at most Limits.MaxDepth levels anyway.
const maxFaultDepth = 1000

// flowDepth is the deepest nesting of [ and { in data, counting brackets
// inside quoted text too (an overcount only skips the second parse).
func flowDepth(data []byte) int {
	depth, deepest := 0, 0
	for _, b := range data {
		switch b {
		case '[', '{':
			depth++
			deepest = max(deepest, depth)
		case ']', '}':
			depth = max(depth-1, 0)
		}
	}
	return deepest
}
