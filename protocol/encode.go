package protocol

import (
	"bytes"
	"encoding/json"
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
