package protocol_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/protocol"
)

var _ = Describe("Encoding a request", func() {
	It("keeps <, > and & as written in an ensure request's properties", func() {
		e, err := protocol.NewEnsureRequest("exec", map[string]any{"name": "/bin/sh -c 'a && b > /dev/null'", "unless": "test <x"})
		Expect(err).ToNot(HaveOccurred())
		Expect(string(e.Properties)).To(Equal(`{"name":"/bin/sh -c 'a && b > /dev/null'","unless":"test <x"}`))
	})

	It("encodes like json.Marshal but for those escapes, and decodes back to the same request", func() {
		fr := protocol.NewFleetRequest("enc-1", time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), time.Minute)
		fr.Ensure, _ = protocol.NewEnsureRequest("file", map[string]any{"name": "/tmp/x", "content": "<html>&amp;</html>"})
		data, err := protocol.EncodeJSON(fr)
		Expect(err).ToNot(HaveOccurred())
		Expect(string(data)).ToNot(ContainSubstring(`\u00`))
		Expect(string(data)).To(HaveSuffix("}"), "no trailing newline")
		back, err := protocol.DecodeFleetRequest(data, protocol.Limits{})
		Expect(err).ToNot(HaveOccurred())
		Expect(string(back.Ensure.Properties)).To(Equal(`{"content":"<html>&amp;</html>","name":"/tmp/x"}`))
	})

	DescribeTable("refuses text that is not UTF-8, naming where it is, rather than change it",
		func(props map[string]any, want string) {
			e, err := protocol.NewEnsureRequest("file", props)
			Expect(e).To(BeNil())
			Expect(err).To(MatchError(protocol.ErrBadRequest))
			Expect(err.Error()).To(ContainSubstring(want))
		},
		Entry("a property", map[string]any{"name": "/tmp/x", "content": "ab\xffcd"}, `file properties: bad_request: field "content": not valid UTF-8 at byte 2`),
		Entry("a list item", map[string]any{"name": "/tmp/x", "health_checks": []any{map[string]any{"command": "ok"}, map[string]any{"command": "echo \xfe"}}}, `field "health_checks[1].command": not valid UTF-8 at byte 5`),
		Entry("a string list", map[string]any{"name": "/tmp/x", "exclude": []string{"a", "\xc3"}}, `field "exclude[1]": not valid UTF-8 at byte 0`),
		Entry("a map key", map[string]any{"name": "/tmp/x", "environment": map[string]string{"A\xff": "b"}}, `field "environment": key "A\xff" is not valid UTF-8`),
		Entry("a truncated rune", map[string]any{"name": "caf\xc3"}, `field "name": not valid UTF-8 at byte 3`),
	)

	It("refuses properties that contain themselves instead of following them for ever", func() {
		props := map[string]any{"name": "/tmp/x"}
		props["self"] = props
		e, err := protocol.NewEnsureRequest("file", props)
		Expect(e).To(BeNil())
		Expect(err).To(MatchError(protocol.ErrBadRequest))
		Expect(err.Error()).To(Equal("file properties: bad_request: nested more than 1000 levels deep (a value that contains itself?)"))
	})

	It("accepts any valid UTF-8, U+FFFD itself included, and leaves it as given", func() {
		e, err := protocol.NewEnsureRequest("file", map[string]any{"name": "/tmp/café", "content": "\uFFFD 🚀", "mode": 420, "sensitive": true})
		Expect(err).ToNot(HaveOccurred())
		Expect(string(e.Properties)).To(Equal("{\"content\":\"\uFFFD 🚀\",\"mode\":420,\"name\":\"/tmp/café\",\"sensitive\":true}"))
		Expect(string(e.Properties)).To(ContainSubstring("\xef\xbf\xbd"), "U+FFFD as its three bytes, not an escape")
	})
})
