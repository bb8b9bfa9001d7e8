package protocol_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ccm-fleet/ccm/protocol"
)

// fuzzLimits keep each fuzz input small enough that the fuzzer spends its
// time on structure, not on megabyte strings.
var fuzzLimits = protocol.Limits{MaxBytes: 64 << 10}

// fleetRequestSeeds are requests from the fleet request tests: valid ones
// in JSON and YAML and the ways they are broken there.
var fleetRequestSeeds = []string{
	`{"protocol":"io.choria.ccm.v1.fleet.request","id":"01J9ZQ-req_1","created":"2025-03-01T10:00:00Z","ttl":"30s","noop":true,"filter":{"where":[{"key":"os","op":"=","value":"debian"}],"hosts":["/^web/"]},"targets":["web1.example.com","web2.example.com"],"ensure":` + validEnsure + `}`,
	`{"protocol":"io.choria.ccm.v1.fleet.request","id":"r3","created":"2025-03-01T10:00:00Z","ttl":45000000000,"noop":false,"filter":null,"ensure":{"protocol":"io.choria.ccm.v1.resource.ensure.request","type":"file","properties":{"name":"/tmp/x"}}}`,
	"protocol: io.choria.ccm.v1.fleet.request\nid: r2\ncreated: 2025-03-01T10:00:00Z\nttl: 1m\nnoop: false\nfilter: null\nmanifest:\n  resources:\n    - file:\n        name: /etc/motd\n        content: hello\n",
	`{"protocol":"io.choria.ccm.v1.fleet.request","id":"r","created":"2025-03-01T10:00:00Z","filter":{"where":[{"key":"cpus","op":">=","value":"4"},{"key":"kernel","op":"=~","value":"^6\\."}]},"ensure":` + validEnsure + `}`,
	`{"protocol":"io.choria.ccm.v1.fleet.request","id":"r","created":"2025-03-01T10:00:00Z","ttl":"-1s","ensure":` + validEnsure + `}`,
	`{"protocol":"io.choria.ccm.v1.fleet.request","id":"r","created":"2025-03-01T10:00:00Z","ensure":` + validEnsure + `,"manifest":{}}`,
	`{"protocol":"io.choria.ccm.v1.fleet.request","id":"a b","created":"noon","targets":["a b"],"ensure":` + validEnsure + `,"extra":1}`,
	`{"protocol":"io.choria.ccm.v1.fleet.request","id":"r","created":"2025-03-01T10:00:00Z","filter":{"where":[{"key":"k","op":"=~","value":"["}]},"ensure":` + validEnsure + `}`,
	"a: &x [1]\nb: *x\n",
	`{"protocol":"io.choria.ccm.v1.fleet.request","id":"r","manifest":` + strings.Repeat("[", 40) + strings.Repeat("]", 40) + `}`,
	`{"\u0070rotocol":"io.choria.ccm.v1.fleet.request"} {}`,
	``, `null`, `[]`, `"x"`,
}

// fleetReplySeeds are replies from the fleet reply tests.
var fleetReplySeeds = []string{
	`{"protocol":"io.choria.ccm.v1.fleet.reply","request_id":"r1","identity":"web1.example.com","started":"2025-03-01T10:00:01Z","duration":0,"events":[]}`,
	`{"Protocol":"io.choria.ccm.v1.fleet.reply","request_id":"r","identity":"h","events":[{"type":"file","name":"a \"}\": [","future_field":1,"properties":{"x":1},"status":{"type":"file","name":"a","ensure":"present","metadata":{"name":"a","provider":"posix"}}}],"error":{"code":"busy","message":"m"}}`,
	`{"protocol":"io.choria.ccm.v1.fleet.reply","request_id":"r","identity":"h","events":[],"extra":1}`,
	`{"protocol":"io.choria.ccm.v1.fleet.reply","request_id":"r","identity":"h","duration":-1}`,
	`{"protocol":"io.choria.ccm.v1.fleet.reply","request_id":"r","identity":"h","error":{"code":"","message":"x"}}`,
	`{"protocol":"io.choria.ccm.v1.fleet.reply","request_id":"r","identity":"h","events":[null]}`,
	`{"protocol":"io.choria.ccm.v1.fleet.reply","request_id":"r","identity":"h","events":[],"error":{"code":"x","message":"a \\\"b\":{"},"extra":1}`,
	`{"protocol":"io.choria.ccm.v1.fleet.reply","request_id":"r","identity":"h","events":[{"properties":` + strings.Repeat("[", 40) + strings.Repeat("]", 40) + `}]}`,
	`{"protocol":"io.choria.ccm.v1.fleet.reply","request_id":"r",}`,
	``, `null`,
}

// FuzzDecodeFleetRequest checks that DecodeFleetRequest never panics on
// arbitrary bytes, and that a request it accepts validates, encodes, and
// decodes again to a request that encodes the same.
func FuzzDecodeFleetRequest(f *testing.F) {
	for _, s := range fleetRequestSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		req, err := protocol.DecodeFleetRequest(data, fuzzLimits)
		if err != nil {
			return
		}
		if err := req.Validate(); err != nil {
			t.Fatalf("decoded request does not validate: %v\ninput %q", err, data)
		}
		first, err := json.Marshal(req)
		if err != nil {
			t.Fatalf("encode: %v\ninput %q", err, data)
		}
		again, err := protocol.DecodeFleetRequest(first, protocol.Limits{})
		if err != nil {
			t.Fatalf("its own encoding does not decode: %v\nencoded %s\ninput %q", err, first, data)
		}
		second, err := json.Marshal(again)
		if err != nil {
			t.Fatalf("encode again: %v", err)
		}
		if !bytes.Equal(first, second) {
			t.Fatalf("round trip changed the request:\nfirst  %s\nsecond %s\ninput %q", first, second, data)
		}
		if !again.Created.Equal(req.Created) || again.TTL != req.TTL || again.ID != req.ID || again.Noop != req.Noop {
			t.Fatalf("round trip changed a field:\nfirst  %+v\nsecond %+v", req, again)
		}
	})
}

// FuzzDecodeFleetReply checks that DecodeFleetReply never panics on
// arbitrary bytes, and that a reply it accepts validates, encodes, and
// decodes again to a reply that encodes the same.
func FuzzDecodeFleetReply(f *testing.F) {
	for _, s := range fleetReplySeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		reply, err := protocol.DecodeFleetReply(data, fuzzLimits)
		if err != nil {
			return
		}
		if err := reply.Validate(); err != nil {
			t.Fatalf("decoded reply does not validate: %v\ninput %q", err, data)
		}
		first, err := reply.Encode()
		if err != nil {
			t.Fatalf("encode: %v\ninput %q", err, data)
		}
		again, err := protocol.DecodeFleetReply(first, protocol.Limits{})
		if err != nil {
			t.Fatalf("its own encoding does not decode: %v\nencoded %s\ninput %q", err, first, data)
		}
		second, err := again.Encode()
		if err != nil {
			t.Fatalf("encode again: %v", err)
		}
		if !bytes.Equal(first, second) {
			t.Fatalf("round trip changed the reply:\nfirst  %s\nsecond %s\ninput %q", first, second, data)
		}
	})
}
