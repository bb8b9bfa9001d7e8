package protocol_test

import (
	"reflect"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/protocol"
)

// jsonNames lists the JSON names of a struct type's fields.
func jsonNames(t reflect.Type) []string {
	var names []string
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			names = append(names, name)
		}
	}
	return names
}

// The decoders read through private wire structs; these specs fail when a
// field is added to the public type but not to its wire struct.
var _ = Describe("Fleet decoders", func() {
	It("accept every field of FleetRequest", func() {
		names := jsonNames(reflect.TypeFor[protocol.FleetRequest]())
		Expect(names).To(ContainElements("protocol", "id", "created", "ttl", "noop", "filter", "targets", "ensure", "manifest"))
		for _, name := range names {
			doc := fleetDoc()
			if _, ok := doc[name]; !ok {
				doc[name] = nil
			}
			_, err := protocol.DecodeFleetRequest(encode(doc), protocol.Limits{})
			Expect(err).ToNot(HaveOccurred(), "field %q", name)
		}
	})

	It("accept every field of FleetReply", func() {
		names := jsonNames(reflect.TypeFor[protocol.FleetReply]())
		Expect(names).To(ContainElements("protocol", "request_id", "identity", "started", "duration", "events", "error"))
		for _, name := range names {
			doc := map[string]any{"protocol": protocol.FleetReplyProtocol, "request_id": "r", "identity": "h", "started": time.Now()}
			if _, ok := doc[name]; !ok {
				doc[name] = nil
			}
			_, err := protocol.DecodeFleetReply(encode(doc), protocol.Limits{})
			Expect(err).ToNot(HaveOccurred(), "field %q", name)
		}
	})
})
