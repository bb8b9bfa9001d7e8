package protocol_test

import (
	"encoding/json"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/protocol"
)

var _ = Describe("DecodeEnsureRequest", func() {
	It("decodes a JSON request", func() {
		req, enc, err := protocol.DecodeEnsureRequest([]byte(`{"protocol":"io.choria.ccm.v1.resource.ensure.request","type":"file","properties":{"name":"/tmp/x","mode":"0644"}}`), protocol.Limits{})
		Expect(err).ToNot(HaveOccurred())
		Expect(enc).To(Equal(protocol.EncodingJSON))
		Expect(req.Type).To(Equal("file"))
		m, err := req.PropertiesMap()
		Expect(err).ToNot(HaveOccurred())
		Expect(m).To(HaveKeyWithValue("mode", "0644"))
	})

	It("decodes a YAML request and converts its properties to JSON", func() {
		req, enc, err := protocol.DecodeEnsureRequest([]byte("protocol: io.choria.ccm.v1.resource.ensure.request\ntype: exec\nproperties:\n  name: /bin/true\n  returns: [0, 1]\n"), protocol.Limits{})
		Expect(err).ToNot(HaveOccurred())
		Expect(enc).To(Equal(protocol.EncodingYAML))
		Expect(string(req.Properties)).To(MatchJSON(`{"name":"/bin/true","returns":[0,1]}`))
	})

	DescribeTable("rejects bad requests with an error naming the problem",
		func(doc string, want string) {
			_, _, err := protocol.DecodeEnsureRequest([]byte(doc), protocol.Limits{MaxBytes: 512, MaxDepth: 4})
			Expect(err).To(MatchError(protocol.ErrBadRequest))
			Expect(err.Error()).To(ContainSubstring(want))
		},
		Entry("unknown field", `{"protocol":"io.choria.ccm.v1.resource.ensure.request","type":"file","properties":{},"extra":1}`, `unknown field "extra"`),
		Entry("wrong type", `{"protocol":"io.choria.ccm.v1.resource.ensure.request","type":5,"properties":{}}`, `field "type": expected a string, got number`),
		Entry("wrong protocol", `{"protocol":"x","type":"file","properties":{}}`, `field "protocol": expected`),
		Entry("missing type", `{"protocol":"io.choria.ccm.v1.resource.ensure.request","properties":{}}`, `field "type" is required`),
		Entry("missing properties", `{"protocol":"io.choria.ccm.v1.resource.ensure.request","type":"file"}`, `field "properties" is required`),
		Entry("properties not an object", `{"protocol":"io.choria.ccm.v1.resource.ensure.request","type":"file","properties":[1]}`, `must be an object`),
		Entry("trailing data", `{"protocol":"io.choria.ccm.v1.resource.ensure.request","type":"file","properties":{}} {}`, `unexpected data after the document`),
		Entry("truncated JSON", `{"protocol":"io.choria`, `document ends early`),
		Entry("oversized", `{"protocol":"`+strings.Repeat("a", 600)+`"}`, `input too large`),
		Entry("too deep JSON", `{"protocol":"io.choria.ccm.v1.resource.ensure.request","type":"file","properties":{"a":{"b":{"c":{"d":1}}}}}`, `nests deeper than 4`),
		Entry("too deep YAML", "protocol: p\ntype: t\nproperties:\n  a:\n    b:\n      c:\n        d: 1\n", `nests deeper than 4`),
		Entry("YAML anchor on a scalar", "protocol: &p io.choria.ccm.v1.resource.ensure.request\ntype: *p\nproperties: {}\n", `field "protocol": YAML anchors are not accepted`),
		Entry("YAML alias", "protocol: io.choria.ccm.v1.resource.ensure.request\ntype: file\nproperties: {a: *p}\n", `invalid YAML (yaml: unknown anchor 'p' referenced)`),
		Entry("YAML scalar that its tag cannot hold", "protocol: !!int abc\n", "field \"protocol\": yaml: cannot decode !!str `abc` as a !!int"),
		Entry("YAML anchor on a map", "protocol: io.choria.ccm.v1.resource.ensure.request\ntype: file\nproperties: &a {name: x}\n", `YAML anchors are not accepted`),
		Entry("duplicate YAML key", "protocol: a\nprotocol: b\n", `appears twice`),
		Entry("invalid YAML", "protocol: [unclosed\n", `invalid YAML`),
		Entry("invalid YAML: the line of the fault, not of the mapping it is in", "protocol: p\ntype: t\nproperties:\n  a: 1\n  b: 2\n  c: 3\n bad: 4\n", `invalid YAML at line 7, column 2: value is not allowed in this context`),
		Entry("two YAML documents", "protocol: a\n---\nprotocol: b\n", `more than one YAML document`),
		Entry("empty", "", `empty document`),
	)
})

var _ = Describe("TransactionEvent", func() {
	It("keeps the always-present lists and decodes the status by type", func() {
		ev := protocol.NewTransactionEvent("id1", protocol.TypeFile, "/tmp/x", "")
		ev.Errors, ev.UnmetRequirements = nil, nil
		st := &protocol.FileState{CommonState: protocol.NewCommonState(protocol.TypeFile, "/tmp/x", "present"),
			Metadata: &protocol.FileMetadata{Name: "/tmp/x", Mode: "0644", Provider: "posix"}}
		ev.Status = st
		b, err := json.Marshal(ev)
		Expect(err).ToNot(HaveOccurred())

		var generic map[string]any
		Expect(json.Unmarshal(b, &generic)).To(Succeed())
		Expect(generic).To(HaveKeyWithValue("error", []any{}))
		Expect(generic).To(HaveKeyWithValue("unmet_requirements", []any{}))
		Expect(generic).ToNot(HaveKey("alias"))
		Expect(generic).ToNot(HaveKey("noop_message"))
		for _, k := range []string{"protocol", "event_id", "timestamp", "type", "provider", "name", "requested_ensure", "final_ensure", "duration", "properties", "status", "changed", "refreshed", "failed", "skipped", "noop"} {
			Expect(generic).To(HaveKey(k))
		}
		Expect(generic["status"]).To(HaveKeyWithValue("protocol", "io.choria.ccm.v1.resource.file.state"))

		var back protocol.TransactionEvent
		Expect(json.Unmarshal(b, &back)).To(Succeed())
		fs, ok := back.Status.(*protocol.FileState)
		Expect(ok).To(BeTrue())
		Expect(fs.Metadata.Mode).To(Equal("0644"))
	})

	DescribeTable("names its outcome",
		func(mod func(*protocol.TransactionEvent), want string) {
			ev := protocol.NewTransactionEvent("id", "file", "x", "")
			mod(ev)
			Expect(ev.Outcome()).To(Equal(want))
		},
		Entry("stable", func(*protocol.TransactionEvent) {}, "stable"),
		Entry("changed", func(e *protocol.TransactionEvent) { e.Changed = true }, "changed"),
		Entry("would change", func(e *protocol.TransactionEvent) { e.Changed, e.Noop = true, true }, "would_change"),
		Entry("failed wins", func(e *protocol.TransactionEvent) { e.Changed, e.Failed = true, true }, "failed"),
		Entry("skipped", func(e *protocol.TransactionEvent) { e.Skipped = true }, "skipped"),
		Entry("refreshed", func(e *protocol.TransactionEvent) { e.Refreshed = true }, "refreshed"),
	)
})

var _ = Describe("EventsExitCode", func() {
	ev := func(changed, failed bool) *protocol.TransactionEvent {
		e := protocol.NewTransactionEvent("id", "file", "x", "")
		e.Changed, e.Failed = changed, failed
		return e
	}
	DescribeTable("classifies",
		func(noop bool, events []*protocol.TransactionEvent, want protocol.ExitCode) {
			Expect(protocol.EventsExitCode(noop, events...)).To(Equal(want))
		},
		Entry("all stable", false, []*protocol.TransactionEvent{ev(false, false)}, protocol.ExitOK),
		Entry("changed, not noop", false, []*protocol.TransactionEvent{ev(true, false)}, protocol.ExitOK),
		Entry("drift under noop", true, []*protocol.TransactionEvent{ev(true, false)}, protocol.ExitDrift),
		Entry("failure beats drift", true, []*protocol.TransactionEvent{ev(true, false), ev(false, true)}, protocol.ExitFailed),
	)
})

var _ = Describe("YAMLToJSON on a deeply nested invalid document", func() {
	It("refuses it with yaml.v3's own error, not parsing it again", func() {
		doc := strings.Repeat("[", 200000) + "\n:"
		_, err := protocol.YAMLToJSON([]byte(doc), protocol.Limits{MaxBytes: 1 << 20})
		Expect(err).To(MatchError(protocol.ErrBadRequest))
		Expect(err.Error()).NotTo(ContainSubstring("invalid YAML at line"))
	})
})
