package agent_test

import (
	"encoding/json"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/agent"
	"github.com/ccm-fleet/ccm/protocol"
)

// encodesOf returns how many replies and events this process encoded
// while fn ran.
func encodesOf(fn func()) int64 {
	before := protocol.Encodes()
	fn()
	return protocol.Encodes() - before
}

var _ = Describe("A fleet reply", func() {
	var f *fixture
	BeforeEach(func() {
		f = startAgent(agent.Config{Identity: "web-1"}, map[string]any{"os": "debian"})
	})

	fileProps := func(name string, sensitive bool) map[string]any {
		return map[string]any{"name": filepath.Join(f.dir, name), "ensure": "present", "content": "secret-ish\n",
			"owner": "root", "group": "root", "mode": "0600", "sensitive": sensitive}
	}

	DescribeTable("is encoded once per request, the redaction of its events included, whatever the request",
		func(build func() *protocol.FleetRequest, check func(*protocol.FleetReply)) {
			var reply *protocol.FleetReply
			n := encodesOf(func() { reply = f.send(protocol.RequestNodeSubject("web-1"), build()) })
			Expect(reply.Error).To(BeNil())
			check(reply)
			Expect(n).To(Equal(int64(1)), "encodes of one request's reply")
		},
		Entry("an ensure request", func() *protocol.FleetRequest {
			return ensureRequest("enc-1", time.Minute, "file", fileProps("plain", false))
		}, func(r *protocol.FleetReply) {
			Expect(r.Events).To(HaveLen(1))
			Expect(string(r.Events[0].Properties.(json.RawMessage))).To(ContainSubstring(`"content":"secret-ish\n"`))
		}),
		Entry("an ensure request of a sensitive resource", func() *protocol.FleetRequest {
			return ensureRequest("enc-2", time.Minute, "file", fileProps("secret", true))
		}, func(r *protocol.FleetReply) {
			Expect(r.Events).To(HaveLen(1))
			Expect(string(r.Events[0].Properties.(json.RawMessage))).To(ContainSubstring(`"content":"[sensitive]"`))
		}),
		Entry("a manifest of three resources", func() *protocol.FleetRequest {
			return manifestRequest("enc-3", false, bundleOf(`
ccm:
  resources:
    - file:
        - defaults: {owner: root, group: root, mode: "0600", ensure: present, content: "x\n"}
        - `+filepath.Join(f.dir, "a")+`: {}
        - `+filepath.Join(f.dir, "b")+`: {sensitive: true}
        - `+filepath.Join(f.dir, "c")+`: {}
`, nil))
		}, func(r *protocol.FleetReply) { Expect(r.Events).To(HaveLen(3)) }),
	)

	It("redacts a sensitive resource's event as typed values: no more decoding than a plain one's", func() {
		// Each request is decoded at admission and its reply by this test;
		// redaction that went through JSON (as it did, encoding the state,
		// decoding it as a map, encoding it and decoding it as the state
		// again) would add its own strict decode.
		decodes := func(id, name string, sensitive bool) int64 {
			before := protocol.Decodes()
			reply := f.send(protocol.RequestNodeSubject("web-1"), ensureRequest(id, time.Minute, "file", fileProps(name, sensitive)))
			Expect(reply.Error).To(BeNil())
			Expect(reply.Events).To(HaveLen(1))
			Expect(reply.Events[0].Status).ToNot(BeNil())
			return protocol.Decodes() - before
		}
		plain := decodes("dec-1", "plain", false)
		Expect(decodes("dec-2", "secret", true)).To(Equal(plain))
	})
})
