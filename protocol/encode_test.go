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
})
