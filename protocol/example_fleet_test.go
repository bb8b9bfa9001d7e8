package protocol_test

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/ccm-fleet/ccm/protocol"
)

// --where terms are ANDed; ordering compares numbers numerically and
// versions run by run, so 1.10 is newer than 1.9.
func ExampleParseFilter() {
	f, err := protocol.ParseFilter([]string{"os=debian", "platform_version>=12", "ruby>1.9", "host.info.arch=~^(amd|arm)64$"})
	if err != nil {
		fmt.Println(err)
		return
	}
	facts := map[string]any{
		"identity":         "web1.example.com",
		"os":               "debian",
		"platform_version": "12.4",
		"ruby":             "1.10.2",
		"host":             map[string]any{"info": map[string]any{"arch": "amd64"}},
	}
	fmt.Println(f.Match(facts))
	facts["ruby"] = "1.8.7"
	fmt.Println(f.Match(facts))
	// Output:
	// true
	// false
}

// A term that cannot parse is refused before anything is sent.
func ExampleParseFilter_error() {
	_, err := protocol.ParseFilter([]string{"os=~["})
	fmt.Println(err)
	// Output: bad_request: filter "os=~[": invalid regular expression: missing closing ]: `[`
}

// --host terms are exact identities or /regex/, ORed among themselves and
// ANDed with the --where terms.
func ExampleNewFilter() {
	f, _ := protocol.NewFilter([]string{"role=web"}, []string{"db1.example.com", `/^web\d+\./`})
	fmt.Println(f.Match(map[string]any{"identity": "web7.example.com", "role": "web"}))
	fmt.Println(f.Match(map[string]any{"identity": "mail.example.com", "role": "web"}))
	b, _ := json.Marshal(f)
	fmt.Println(string(b))
	// Output:
	// true
	// false
	// {"where":[{"key":"role","op":"=","value":"web"}],"hosts":["db1.example.com","/^web\\d+\\./"]}
}

// Any string fits one subject token; the encoding is reversible.
func ExampleEncodeToken() {
	for _, s := range []string{"debian", "22.04", "web server", "", "café"} {
		tok := protocol.EncodeToken(s)
		back, _ := protocol.DecodeToken(tok)
		fmt.Printf("%q -> %s -> %q\n", s, tok, back)
	}
	fmt.Println(protocol.RequestFactSubject("platform_version", "22.04"))
	fmt.Println(protocol.HistorySubject("r1", "web1.example.com"))
	// Output:
	// "debian" -> debian -> "debian"
	// "22.04" -> 22%2E04 -> "22.04"
	// "web server" -> web%20server -> "web server"
	// "" -> % -> ""
	// "café" -> caf%C3%A9 -> "café"
	// ccm.v1.req.fact.platform_version.22%2E04
	// ccm.v1.history.r1.web1%2Eexample%2Ecom
}

// A fleet request carries the filter, a lifetime and one body.
func ExampleNewFleetRequest() {
	created := time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)
	req := protocol.NewFleetRequest("r1", created, 30*time.Second)
	req.Noop = true
	req.Filter, _ = protocol.ParseFilter([]string{"os=debian"})
	req.Ensure, _ = protocol.NewEnsureRequest(protocol.TypeService, map[string]any{"name": "nginx", "ensure": "running"})
	if err := req.Validate(); err != nil {
		fmt.Println(err)
		return
	}
	b, _ := json.MarshalIndent(req, "", "  ")
	fmt.Println(string(b))
	fmt.Println(req.Expired(created.Add(time.Minute)))
	// Output:
	// {
	//   "protocol": "io.choria.ccm.v1.fleet.request",
	//   "id": "r1",
	//   "created": "2025-03-01T10:00:00Z",
	//   "ttl": "30s",
	//   "noop": true,
	//   "filter": {
	//     "where": [
	//       {
	//         "key": "os",
	//         "op": "=",
	//         "value": "debian"
	//       }
	//     ]
	//   },
	//   "ensure": {
	//     "protocol": "io.choria.ccm.v1.resource.ensure.request",
	//     "type": "service",
	//     "properties": {
	//       "ensure": "running",
	//       "name": "nginx"
	//     }
	//   }
	// }
	// true
}

// An agent answers with its events, or with a request-level error.
func ExampleDecodeFleetReply() {
	reply := protocol.NewFleetReply("r1", "web1.example.com", time.Date(2025, 3, 1, 10, 0, 1, 0, time.UTC))
	reply.Error = protocol.NewError(protocol.CodeExpired, "request r1 expired")
	b, _ := json.Marshal(reply)
	back, err := protocol.DecodeFleetReply(b, protocol.Limits{})
	fmt.Println(back.Identity, back.Error, err)
	// Output: web1.example.com expired: request r1 expired <nil>
}
