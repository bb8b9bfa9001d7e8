package protocol_test

import (
	"fmt"

	"github.com/ccm-fleet/ccm/protocol"
)

// An ensure request may be written in YAML; it is decoded strictly and its
// properties arrive as JSON.
func ExampleDecodeEnsureRequest() {
	doc := []byte(`
protocol: io.choria.ccm.v1.resource.ensure.request
type: file
properties:
  name: /etc/motd
  content: "managed by ccm\n"
  owner: root
  group: root
  mode: "0644"
`)
	req, enc, err := protocol.DecodeEnsureRequest(doc, protocol.Limits{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(enc, req.Type, string(req.Properties))
	// Output: yaml file {"content":"managed by ccm\n","group":"root","mode":"0644","name":"/etc/motd","owner":"root"}
}

// Unknown fields are refused with an error naming them.
func ExampleDecodeEnsureRequest_unknownField() {
	_, _, err := protocol.DecodeEnsureRequest([]byte(`{"protocol":"io.choria.ccm.v1.resource.ensure.request","type":"file","propertes":{}}`), protocol.Limits{})
	fmt.Println(err)
	// Output: bad_request: unknown field "propertes"
}

// A response carries either the transaction event or a request-level error.
func ExampleNewEnsureResponse() {
	resp := protocol.NewEnsureResponse(nil, fmt.Errorf("file#x: property mode: \"0888\" is not an octal number"))
	b, _ := resp.Marshal(protocol.EncodingJSON)
	fmt.Println(string(b))
	// Output:
	// {
	//   "protocol": "io.choria.ccm.v1.resource.ensure.response",
	//   "error": "file#x: property mode: \"0888\" is not an octal number"
	// }
}

func ExampleStateProtocol() {
	fmt.Println(protocol.StateProtocol(protocol.TypePackage))
	// Output: io.choria.ccm.v1.resource.package.state
}
