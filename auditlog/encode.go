package auditlog

import (
	"strconv"

	"github.com/ccm-fleet/ccm/internal/jsonline"
	"github.com/ccm-fleet/ccm/protocol"
)

// appendRecord appends r as one JSON object, the bytes encoding/json
// writes for it, built without reflection: an agent writes two lines per
// request (accepted, then the result), and json.Marshal cost more than
// the write. It fails, as encoding/json does, on a time whose year is not
// between 0 and 9999.
func appendRecord(b []byte, r *Record) ([]byte, error) {
	b = append(b, `{"time":`...)
	b, err := jsonline.AppendTime(b, r.Time)
	if err != nil {
		return nil, err
	}
	b = jsonline.AppendString(append(b, `,"request_id":`...), r.RequestID)
	b = jsonline.AppendString(append(b, `,"subject":`...), r.Subject)
	b = jsonline.AppendString(append(b, `,"signer":{"name":`...), r.Signer.Name)
	b = jsonline.AppendString(append(b, `,"key":`...), r.Signer.Key)
	b = jsonline.AppendString(append(b, `},"identity":`...), r.Identity)
	b = append(b, `,"resources":`...)
	if r.Resources == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, s := range r.Resources {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonline.AppendString(b, s)
		}
		b = append(b, ']')
	}
	b = jsonline.AppendString(append(b, `,"decision":`...), r.Decision)
	b = appendOmitEmpty(b, `,"message":`, r.Message)
	b = appendOmitEmpty(b, `,"rule":`, r.Rule)
	b = appendOmitEmpty(b, `,"value":`, r.Value)
	if r.Result != nil {
		b = appendResult(append(b, `,"result":`...), r.Result)
	}
	return append(b, '}'), nil
}

// appendResult appends res as encoding/json writes it.
func appendResult(b []byte, res *Result) []byte {
	b = strconv.AppendInt(append(b, `{"changed":`...), int64(res.Changed), 10)
	b = strconv.AppendInt(append(b, `,"ok":`...), int64(res.OK), 10)
	b = strconv.AppendInt(append(b, `,"failed":`...), int64(res.Failed), 10)
	if res.Error != nil {
		b = appendError(append(b, `,"error":`...), res.Error)
	}
	return append(b, '}')
}

// appendError appends e's exported fields as encoding/json writes them.
func appendError(b []byte, e *protocol.Error) []byte {
	b = jsonline.AppendString(append(b, `{"code":`...), string(e.Code))
	b = appendOmitEmpty(b, `,"field":`, e.Field)
	b = jsonline.AppendString(append(b, `,"message":`...), e.Message)
	return append(b, '}')
}

// appendOmitEmpty appends key and s unless s is empty (omitempty).
func appendOmitEmpty(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	return jsonline.AppendString(append(b, key...), s)
}
