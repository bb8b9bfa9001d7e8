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
func yamlFault(data []byte) (line, column int, problem string, ok bool) {
	_, err := goccyparser.ParseBytes(data, 0)
	var se *goccy.SyntaxError
	if !errors.As(err, &se) || se.Token == nil || se.Token.Position == nil || se.Token.Position.Line <= 0 {
		return 0, 0, "", false
	}
	return se.Token.Position.Line, se.Token.Position.Column, se.Message, true
}
