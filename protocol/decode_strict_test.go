package protocol_test

import (
	"errors"
	"github.com/ccm-fleet/ccm/internal/hostile"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/protocol"
)

// badRequestAt asserts err is a bad request whose field is field.
func badRequestAt(err error, field string) *protocol.Error {
	GinkgoHelper()
	Expect(err).To(MatchError(protocol.ErrBadRequest))
	var pe *protocol.Error
	Expect(errors.As(err, &pe)).To(BeTrue(), "%v is a *protocol.Error", err)
	Expect(pe.Code).To(Equal(protocol.CodeBadRequest))
	Expect(pe.Field).To(Equal(field), "%v", err)
	return pe
}

const fleetEnsure = `"ensure":{"protocol":"io.choria.ccm.v1.resource.ensure.request","type":"file","properties":{"name":"/tmp/x"}}`

func fleetWith(members string) string {
	return `{"protocol":"io.choria.ccm.v1.fleet.request","id":"r1","created":"` + time.Now().UTC().Format(time.RFC3339) + `","ttl":"1m",` + members + `}`
}

var _ = Describe("the strict decoder", func() {
	It("sets its options explicitly: the defaults it relies on are checked here", func() {
		// encoding/json would fold case (and Unicode: ſ for s); the
		// decoder must not.
		var v struct {
			Sender string `json:"sender"`
		}
		for _, key := range []string{"Sender", "SENDER", "ſender"} {
			err := protocol.DecodeJSONStrict([]byte(`{"`+key+`":"x"}`), &v)
			pe := badRequestAt(err, key)
			Expect(pe.UnknownKey()).To(BeTrue())
			Expect(pe.Key()).To(Equal(key))
		}
		Expect(v.Sender).To(BeEmpty())
		Expect(protocol.DecodeJSONStrict([]byte(`{"sender":"x"}`), &v)).To(Succeed())
		Expect(v.Sender).To(Equal("x"))
	})

	It("keeps numbers in `any` as float64 and durations as integer nanoseconds", func() {
		var v struct {
			N any           `json:"n"`
			D time.Duration `json:"d"`
		}
		Expect(protocol.DecodeJSONStrict([]byte(`{"n":3,"d":1500000000}`), &v)).To(Succeed())
		Expect(v.N).To(Equal(float64(3)))
		Expect(v.D).To(Equal(1500 * time.Millisecond))
		Expect(protocol.DecodeJSONStrict([]byte(`{"d":"1s"}`), &v)).To(MatchError(protocol.ErrBadRequest))
	})

	It("reads durations as strings in configuration files", func() {
		var v struct {
			D time.Duration `json:"d"`
		}
		_, err := protocol.DecodeConfig([]byte("d: 90s\n"), &v, protocol.Limits{})
		Expect(err).ToNot(HaveOccurred())
		Expect(v.D).To(Equal(90 * time.Second))
		_, err = protocol.DecodeConfig([]byte("d: soon\n"), &v, protocol.Limits{})
		badRequestAt(err, "d")
	})

	DescribeTable("refuses fleet request keys in another case, naming the key as written",
		func(doc, field string) {
			_, err := protocol.DecodeFleetRequest([]byte(doc), protocol.Limits{})
			pe := badRequestAt(err, field)
			Expect(pe.UnknownKey()).To(BeTrue())
		},
		Entry("Protocol", strings.Replace(fleetWith(fleetEnsure), `"protocol"`, `"Protocol"`, 1), "Protocol"),
		Entry("ID", strings.Replace(fleetWith(fleetEnsure), `"id"`, `"ID"`, 1), "ID"),
		Entry("CREATED", strings.Replace(fleetWith(fleetEnsure), `"created"`, `"CREATED"`, 1), "CREATED"),
		Entry("TTL", strings.Replace(fleetWith(fleetEnsure), `"ttl"`, `"TTL"`, 1), "TTL"),
		Entry("Noop", fleetWith(fleetEnsure+`,"Noop":true`), "Noop"),
		Entry("Filter", fleetWith(fleetEnsure+`,"Filter":null`), "Filter"),
		Entry("Targets", fleetWith(fleetEnsure+`,"Targets":["a"]`), "Targets"),
		Entry("Ensure", fleetWith(strings.Replace(fleetEnsure, `"ensure"`, `"Ensure"`, 1)), "Ensure"),
		Entry("Manifest", fleetWith(`"Manifest":{}`), "Manifest"),
		Entry("ſender (long s folds to s)", fleetWith(fleetEnsure+`,"ſender":"U"`), "ſender"),
		Entry("REPLY", fleetWith(fleetEnsure+`,"REPLY":"x"`), "REPLY"),
		Entry("ensure.Type", fleetWith(strings.Replace(fleetEnsure, `"type"`, `"Type"`, 1)), "ensure.Type"),
		Entry("ensure.PROPERTIES", fleetWith(strings.Replace(fleetEnsure, `"properties"`, `"PROPERTIES"`, 1)), "ensure.PROPERTIES"),
		Entry("ensure.propertieſ (long s)", fleetWith(strings.Replace(fleetEnsure, `"properties"`, `"propertieſ"`, 1)), "ensure.propertieſ"),
	)

	DescribeTable("refuses registry keys in another case, the Kelvin sign included",
		func(key string) {
			doc := `{"protocol":"io.choria.ccm.v1.fleet.node","identity":"h","facts":{},"` + key + `":"x"}`
			_, err := protocol.DecodeNodeRecord([]byte(doc), protocol.Limits{})
			badRequestAt(err, key)
		},
		Entry("public_Key", "public_Key"),
		Entry("public_\u212aey (Kelvin sign K folds to k)", "public_\u212aey"),
		Entry("Version", "Version"),
	)

	DescribeTable("refuses a key twice at every level of JSON",
		func(doc, field string) {
			_, err := protocol.DecodeFleetRequest([]byte(doc), protocol.Limits{})
			pe := badRequestAt(err, field)
			Expect(pe.Message).To(ContainSubstring("appears twice"))
		},
		Entry("top level", fleetWith(fleetEnsure+`,"noop":true,"noop":false`), "noop"),
		Entry("ensure", fleetWith(strings.Replace(fleetEnsure, `"type":"file"`, `"type":"file","type":"exec"`, 1)), "ensure.type"),
		Entry("ensure.properties", fleetWith(strings.Replace(fleetEnsure, `"name":"/tmp/x"`, `"name":"/tmp/x","name":"/etc/passwd"`, 1)), "ensure.properties.name"),
		Entry("filter", fleetWith(fleetEnsure+`,"filter":{"hosts":["a"],"hosts":["b"]}`), "filter.hosts"),
		Entry("a filter term", fleetWith(fleetEnsure+`,"filter":{"where":[{"key":"os","key":"role","op":"=","value":"x"}]}`), "filter.where[0].key"),
		Entry("manifest", fleetWith(`"manifest":{"manifest":{},"manifest":{}}`), "manifest.manifest"),
	)

	DescribeTable("refuses a key twice at every level of YAML",
		func(doc, field string) {
			_, _, err := protocol.DecodeEnsureRequest([]byte(doc), protocol.Limits{})
			pe := badRequestAt(err, field)
			Expect(pe.Message).To(ContainSubstring("appears twice"))
		},
		Entry("top level", "protocol: a\ntype: file\ntype: exec\nproperties: {}\n", "type"),
		Entry("properties", "protocol: a\ntype: file\nproperties:\n  name: /a\n  name: /b\n", "properties.name"),
		Entry("nested in properties", "protocol: a\ntype: file\nproperties:\n  control:\n    if: a\n    if: b\n", "properties.control.if"),
		Entry("in a list item", "protocol: a\ntype: file\nproperties:\n  l:\n    - {a: 1, a: 2}\n", "properties.l[0].a"),
	)

	It("decodes the properties of an ensure request with the same rules", func() {
		req := &protocol.EnsureRequest{Protocol: protocol.EnsureRequestProtocol, Type: "file", Properties: []byte(`{"name":"/a","name":"/b"}`)}
		_, err := req.PropertiesMap()
		badRequestAt(err, "properties.name")
		req.Properties = []byte("{\"name\":\"/tmp/\xff\"}")
		_, err = req.PropertiesMap()
		badRequestAt(err, "properties.name")
	})

	DescribeTable("refuses invalid UTF-8 in keys and values",
		func(doc string, field string) {
			_, _, err := protocol.DecodeEnsureRequest([]byte(doc), protocol.Limits{})
			pe := badRequestAt(err, field)
			Expect(pe.Message).To(ContainSubstring("UTF-8"))
		},
		Entry("JSON value", "{\"protocol\":\"io.choria.ccm.v1.resource.ensure.request\",\"type\":\"file\",\"properties\":{\"name\":\"/tmp/\xff\"}}", "properties.name"),
		Entry("JSON key", "{\"protocol\":\"io.choria.ccm.v1.resource.ensure.request\",\"type\":\"file\",\"properties\":{\"na\xc3me\":\"/tmp/x\"}}", "properties"),
		Entry("JSON top-level key", "{\"protocol\":\"io.choria.ccm.v1.resource.ensure.request\",\"\xfe\":1}", ""),
		Entry("YAML value", "protocol: io.choria.ccm.v1.resource.ensure.request\ntype: file\nproperties:\n  name: /tmp/\xff\n", ""),
		Entry("YAML key", "protocol: io.choria.ccm.v1.resource.ensure.request\ntype: file\nproperties:\n  na\xc3me: /tmp/x\n", ""),
	)

	It("names the line of invalid UTF-8 in YAML", func() {
		_, err := protocol.YAMLToJSON([]byte("a: 1\nb: \xff\n"), protocol.Limits{})
		Expect(err).To(MatchError(ContainSubstring("invalid UTF-8 at line 2")))
	})

	DescribeTable("refuses YAML anchors, aliases, merge keys and keys that are not strings",
		func(doc, want string) {
			_, err := protocol.YAMLToJSON([]byte(doc), protocol.Limits{})
			Expect(err).To(MatchError(protocol.ErrBadRequest))
			Expect(err).To(MatchError(ContainSubstring(want)))
		},
		Entry("anchor on a scalar", "a: &x 1\n", `field "a": YAML anchors are not accepted`),
		Entry("anchor on a list", "a: &x [1]\n", `YAML anchors are not accepted`),
		Entry("merge key", "a: {b: 1}\nc:\n  <<: {b: 2}\n", `merge keys`),
		Entry("integer key", "1: a\n", "keys must be strings, got int"),
		Entry("null key", "~: a\n", "keys must be strings, got null"),
		Entry("list key", "? [a]\n: b\n", "keys must be strings, got a sequence"),
	)

	It("refuses a 9-level alias bomb at once, whatever the limits", func() {
		for _, limits := range []protocol.Limits{{}, {MaxBytes: 64 << 20, MaxDepth: 1000}} {
			var v map[string]any
			_, err := protocol.DecodeStrict(hostile.AliasBomb("data"), &v, limits)
			pe := badRequestAt(err, "data.a0")
			Expect(pe.Message).To(ContainSubstring("YAML anchors are not accepted"))
		}
	})

	It("reads YAML in flow style that starts with a brace", func() {
		var v map[string]any
		enc, err := protocol.DecodeStrict([]byte(`{users: [a, b]}`), &v, protocol.Limits{})
		Expect(err).ToNot(HaveOccurred())
		Expect(enc).To(Equal(protocol.EncodingYAML))
		Expect(v).To(HaveKeyWithValue("users", []any{"a", "b"}))
	})

	It("puts the field on the wire next to code and message", func() {
		_, err := protocol.DecodeFleetRequest([]byte(fleetWith(strings.Replace(fleetEnsure, `"name"`, `"NAME"`, 1))), protocol.Limits{})
		Expect(err).ToNot(HaveOccurred(), "properties are checked by the engine, not the envelope")

		_, err = protocol.DecodeFleetRequest([]byte(fleetWith(fleetEnsure+`,"Noop":true`)), protocol.Limits{})
		reply := protocol.NewFleetReply("r1", "h", time.Now())
		reply.Error = protocol.AsError(err)
		b, encErr := reply.Encode()
		Expect(encErr).ToNot(HaveOccurred())
		Expect(string(b)).To(ContainSubstring(`"error":{"code":"bad_request","field":"Noop","message":"unknown field \"Noop\""}`))
		back, decErr := protocol.DecodeFleetReply(b, protocol.Limits{})
		Expect(decErr).ToNot(HaveOccurred())
		Expect(back.Error.Field).To(Equal("Noop"))
	})

	It("locates nested errors under their parent with Within", func() {
		err := protocol.ValidateIdentity("a b")
		var pe *protocol.Error
		Expect(errors.As(err, &pe)).To(BeTrue())
		in := pe.Within("signers[0]").Within("policy")
		Expect(in.Field).To(Equal("policy.signers[0]"))
		Expect(in.Message).To(HavePrefix(`field "policy.signers[0]": identity "a b"`))
		Expect(in.KeyMessage()).To(HavePrefix(`policy.signers[0]: identity "a b"`))
	})
})
