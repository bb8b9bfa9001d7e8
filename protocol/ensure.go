package protocol

import (
	"encoding/json"
	"fmt"

	"gopkg.in/yaml.v3"
)

// EnsureRequest asks for one resource to be brought to its desired state.
type EnsureRequest struct {
	Protocol string `json:"protocol"`
	Type     string `json:"type"`
	// Properties are the resource's properties as a JSON object; a YAML
	// request is converted to JSON on decoding.
	Properties json.RawMessage `json:"properties"`
}

// EnsureResponse answers an EnsureRequest: Error when the request could not
// be processed at all, State otherwise, including when the resource failed.
type EnsureResponse struct {
	Protocol string            `json:"protocol"`
	Error    string            `json:"error,omitempty"`
	State    *TransactionEvent `json:"state,omitempty"`
}

// NewEnsureRequest builds a request for typeName with the given
// properties, encoded as EncodeJSON does (<, > and & as written).
//
// A string that is not valid UTF-8 is refused, naming its property: JSON
// would carry each invalid byte as U+FFFD, so the hosts would apply other
// text than the one given.
func NewEnsureRequest(typeName string, properties map[string]any) (*EnsureRequest, error) {
	if err := checkText(properties); err != nil {
		return nil, fmt.Errorf("%s properties: %w", typeName, err)
	}
	raw, err := EncodeJSON(properties)
	if err != nil {
		return nil, fmt.Errorf("%s properties: %w", typeName, err)
	}
	return &EnsureRequest{Protocol: EnsureRequestProtocol, Type: typeName, Properties: raw}, nil
}

// DecodeEnsureRequest strictly decodes a JSON or YAML ensure request and
// reports which encoding it used. The protocol id, type and properties are
// required; unknown fields and oversized input are bad requests.
func DecodeEnsureRequest(data []byte, limits Limits) (*EnsureRequest, Encoding, error) {
	var req EnsureRequest
	enc, err := DecodeStrict(data, &req, limits)
	if err != nil {
		return nil, enc, err
	}
	if err := req.Validate(); err != nil {
		return nil, enc, err
	}
	return &req, enc, nil
}

// Validate checks the request's envelope; the properties are checked by the
// resource type that receives them.
func (r *EnsureRequest) Validate() error {
	switch {
	case r.Protocol != EnsureRequestProtocol:
		return badRequest("field \"protocol\": expected %q, got %q", EnsureRequestProtocol, r.Protocol)
	case r.Type == "":
		return badRequest("field \"type\" is required")
	case len(r.Properties) == 0 || string(r.Properties) == "null":
		return badRequest("field \"properties\" is required")
	case r.Properties[0] != '{':
		return badRequest("field \"properties\" must be an object")
	}
	return nil
}

// PropertiesMap decodes the request's properties into a generic map, with
// the rules of DecodeStrict (a key twice or invalid UTF-8 is a bad request
// naming properties.<key>).
func (r *EnsureRequest) PropertiesMap() (map[string]any, error) {
	var m map[string]any
	if err := DecodeJSONStrict(r.Properties, &m); err != nil {
		return nil, within("properties", err)
	}
	return m, nil
}

// NewEnsureResponse answers with the event, or with err when the request
// could not be processed.
func NewEnsureResponse(event *TransactionEvent, err error) *EnsureResponse {
	r := &EnsureResponse{Protocol: EnsureResponseProtocol}
	if err != nil {
		r.Error = err.Error()
	} else {
		r.State = event
	}
	return r
}

// Marshal encodes the response in enc: indented JSON, or YAML (converted
// from that JSON, so both show the same fields). The event is encoded in
// the same pass as the response, not alone first.
func (r *EnsureResponse) Marshal(enc Encoding) ([]byte, error) {
	encodes.Add(1)
	w := ensureResponseJSON{Protocol: r.Protocol, Error: r.Error}
	if r.State != nil {
		w.State = r.State.wire()
	}
	js, err := json.MarshalIndent(&w, "", "  ")
	if err != nil || enc != EncodingYAML {
		return js, err
	}
	var generic any
	if err := json.Unmarshal(js, &generic); err != nil {
		return nil, err
	}
	return yaml.Marshal(generic)
}

// ensureResponseJSON is EnsureResponse as encoded, its event without JSON
// methods (see eventJSON). It must list every field of EnsureResponse.
type ensureResponseJSON struct {
	Protocol string     `json:"protocol"`
	Error    string     `json:"error,omitempty"`
	State    *eventJSON `json:"state,omitempty"`
}
