package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
)

// The kinds of --jsonl lines (schemas/run-line.schema.json): each host's
// reply as it arrives, then the whole result.
const (
	lineHostResult = "host_result"
	lineResult     = "result"
)

// writeLine writes v, which must encode as a JSON object, as one line
// whose first member is "kind": kind, so a consumer can tell the lines
// apart without guessing from their fields.
func writeLine(w io.Writer, kind string, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s line: %w", kind, err)
	}
	if len(body) < 2 || body[0] != '{' {
		return fmt.Errorf("encode %s line: not a JSON object", kind)
	}
	var line bytes.Buffer
	line.Grow(len(body) + len(kind) + 12)
	line.WriteString(`{"kind":`)
	line.WriteString(strconv.Quote(kind))
	if len(body) > 2 {
		line.WriteByte(',')
	}
	line.Write(body[1:])
	line.WriteByte('\n')
	_, err = w.Write(line.Bytes())
	return err
}
