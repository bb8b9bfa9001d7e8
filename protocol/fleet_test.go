package protocol_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/protocol"
)

const validEnsure = `{"protocol":"io.choria.ccm.v1.resource.ensure.request","type":"service","properties":{"name":"nginx","ensure":"running"}}`

// fleetDoc returns a valid fleet request as a generic map, for tests to break.
func fleetDoc() map[string]any {
	var ensure map[string]any
	Expect(json.Unmarshal([]byte(validEnsure), &ensure)).To(Succeed())
	return map[string]any{
		"protocol": "io.choria.ccm.v1.fleet.request",
		"id":       "01J9ZQ-req_1",
		"created":  "2025-03-01T10:00:00Z",
		"ttl":      "30s",
		"noop":     true,
		"filter":   map[string]any{"where": []any{map[string]any{"key": "os", "op": "=", "value": "debian"}}, "hosts": []any{"/^web/"}},
		"targets":  []any{"web1.example.com", "web2.example.com"},
		"ensure":   ensure,
	}
}

func encode(doc map[string]any) []byte {
	b, err := json.Marshal(doc)
	Expect(err).ToNot(HaveOccurred())
	return b
}

var _ = Describe("FleetRequest", func() {
	It("decodes and validates a JSON request, compiling its filter", func() {
		req, err := protocol.DecodeFleetRequest(encode(fleetDoc()), protocol.Limits{})
		Expect(err).ToNot(HaveOccurred())
		Expect(req.ID).To(Equal("01J9ZQ-req_1"))
		Expect(req.Created).To(BeTemporally("==", time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)))
		Expect(time.Duration(req.TTL)).To(Equal(30 * time.Second))
		Expect(req.Noop).To(BeTrue())
		Expect(req.Targets).To(ConsistOf("web1.example.com", "web2.example.com"))
		Expect(req.Ensure.Type).To(Equal("service"))
		Expect(req.Filter.Match(map[string]any{"identity": "web1", "os": "debian"})).To(BeTrue())
		Expect(req.Filter.Match(map[string]any{"identity": "db1", "os": "debian"})).To(BeFalse())
	})

	It("decodes a YAML request with a manifest body", func() {
		doc := []byte(`protocol: io.choria.ccm.v1.fleet.request
id: r2
created: 2025-03-01T10:00:00Z
ttl: 1m
noop: false
filter: null
manifest:
  resources:
    - file:
        name: /etc/motd
        content: hello
`)
		req, err := protocol.DecodeFleetRequest(doc, protocol.Limits{})
		Expect(err).ToNot(HaveOccurred())
		Expect(req.Filter).To(BeNil())
		Expect(req.Filter.Match(map[string]any{})).To(BeTrue())
		Expect(req.Ensure).To(BeNil())
		Expect(string(req.Manifest)).To(MatchJSON(`{"resources":[{"file":{"name":"/etc/motd","content":"hello"}}]}`))
		Expect(time.Duration(req.TTL)).To(Equal(time.Minute))
	})

	It("accepts ttl as integer nanoseconds and writes it back as a duration string", func() {
		doc := fleetDoc()
		doc["ttl"] = 45 * time.Second
		req, err := protocol.DecodeFleetRequest(encode(doc), protocol.Limits{})
		Expect(err).ToNot(HaveOccurred())
		Expect(time.Duration(req.TTL)).To(Equal(45 * time.Second))

		b, err := json.Marshal(req)
		Expect(err).ToNot(HaveOccurred())
		var generic map[string]any
		Expect(json.Unmarshal(b, &generic)).To(Succeed())
		Expect(generic).To(HaveKeyWithValue("ttl", "45s"))
		Expect(generic).To(HaveKeyWithValue("protocol", protocol.FleetRequestProtocol))
		Expect(generic).ToNot(HaveKey("manifest"))

		again, err := protocol.DecodeFleetRequest(b, protocol.Limits{})
		Expect(err).ToNot(HaveOccurred())
		Expect(again.TTL).To(Equal(req.TTL))
		Expect(again.Filter.Where).To(Equal(req.Filter.Where))
	})

	It("builds a request that validates", func() {
		created := time.Date(2025, 3, 1, 11, 0, 0, 0, time.FixedZone("CET", 3600))
		req := protocol.NewFleetRequest("r3", created, time.Minute)
		Expect(req.Created.Location()).To(Equal(time.UTC))
		Expect(req.Validate()).To(MatchError(ContainSubstring(`field "ensure" or "manifest" is required`)))
		req.Ensure, _ = protocol.NewEnsureRequest("file", map[string]any{"name": "/tmp/x"})
		Expect(req.Validate()).To(Succeed())
		b, err := json.Marshal(req)
		Expect(err).ToNot(HaveOccurred())
		Expect(string(b)).To(ContainSubstring(`"filter":null`))
		_, err = protocol.DecodeFleetRequest(b, protocol.Limits{})
		Expect(err).ToNot(HaveOccurred())
	})

	DescribeTable("expires after created+ttl",
		func(now time.Time, want bool) {
			req := protocol.NewFleetRequest("r", time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC), 30*time.Second)
			Expect(req.Deadline()).To(Equal(time.Date(2025, 3, 1, 10, 0, 30, 0, time.UTC)))
			Expect(req.Expired(now)).To(Equal(want))
		},
		Entry("at creation", time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC), false),
		Entry("at the deadline", time.Date(2025, 3, 1, 10, 0, 30, 0, time.UTC), false),
		Entry("past the deadline", time.Date(2025, 3, 1, 10, 0, 31, 0, time.UTC), true),
		Entry("in another zone", time.Date(2025, 3, 1, 11, 0, 31, 0, time.FixedZone("CET", 3600)), true),
	)

	It("leaves the ttl to the receiver's default when it is omitted", func() {
		doc := fleetDoc()
		delete(doc, "ttl")
		req, err := protocol.DecodeFleetRequest(encode(doc), protocol.Limits{})
		Expect(err).ToNot(HaveOccurred())
		Expect(req.TTL).To(BeZero())
	})

	It("tells whether an identity is targeted", func() {
		req := protocol.NewFleetRequest("r", time.Now(), time.Minute)
		Expect(req.Targeted("any")).To(BeTrue())
		req.Targets = []string{"web1", "web2"}
		Expect(req.Targeted("web2")).To(BeTrue())
		Expect(req.Targeted("db1")).To(BeFalse())
	})

	DescribeTable("refuses bad requests, naming the field",
		func(mutate func(map[string]any), want string) {
			doc := fleetDoc()
			mutate(doc)
			_, err := protocol.DecodeFleetRequest(encode(doc), protocol.Limits{})
			Expect(err).To(MatchError(protocol.ErrBadRequest))
			Expect(err.Error()).To(ContainSubstring(want))
		},
		Entry("unknown field", func(d map[string]any) { d["sendr"] = "x" }, `unknown field "sendr"`),
		Entry("unknown filter field", func(d map[string]any) { d["filter"] = map[string]any{"wher": []any{}} }, `unknown field "wher"`),
		Entry("wrong protocol", func(d map[string]any) { d["protocol"] = "io.choria.ccm.v1.resource.ensure.request" }, `field "protocol": expected "io.choria.ccm.v1.fleet.request"`),
		Entry("missing id", func(d map[string]any) { delete(d, "id") }, `field "id": request id must not be empty`),
		Entry("id with a dot", func(d map[string]any) { d["id"] = "a.b" }, `field "id": request id "a.b": character at position 1 is not allowed`),
		Entry("id too long", func(d map[string]any) { d["id"] = strings.Repeat("a", 129) }, `field "id": request id is 129 characters long, the limit is 128`),
		Entry("id not a string", func(d map[string]any) { d["id"] = 5 }, `field "id": expected a string`),
		Entry("missing created", func(d map[string]any) { delete(d, "created") }, `field "created" is required`),
		Entry("created not a time", func(d map[string]any) { d["created"] = "yesterday" }, `field "created": expected an RFC 3339 time`),
		Entry("created a number", func(d map[string]any) { d["created"] = 5 }, `field "created": expected an RFC 3339 time`),
		Entry("ttl without unit", func(d map[string]any) { d["ttl"] = "30" }, `field "ttl": invalid duration "30"`),
		Entry("ttl a fraction", func(d map[string]any) { d["ttl"] = 1.5 }, `field "ttl": expected a duration such as "30s" or integer nanoseconds, got 1.5`),
		Entry("ttl a bool", func(d map[string]any) { d["ttl"] = true }, `field "ttl": expected a duration`),
		Entry("ttl zero", func(d map[string]any) { d["ttl"] = "0s" }, `field "ttl": must be positive, got 0s`),
		Entry("ttl negative", func(d map[string]any) { d["ttl"] = "-5s" }, `field "ttl": must be positive, got -5s`),
		Entry("ttl over a day", func(d map[string]any) { d["ttl"] = "24h0m1s" }, `field "ttl": 24h0m1s is longer than the limit of 24h0m0s`),
		Entry("noop not a bool", func(d map[string]any) { d["noop"] = "yes" }, `field "noop": expected true or false`),
		Entry("both bodies", func(d map[string]any) { d["manifest"] = map[string]any{} }, `fields "ensure" and "manifest": send one, not both`),
		Entry("no body", func(d map[string]any) { delete(d, "ensure") }, `field "ensure" or "manifest" is required`),
		Entry("manifest null", func(d map[string]any) { delete(d, "ensure"); d["manifest"] = nil }, `field "ensure" or "manifest" is required`),
		Entry("manifest not an object", func(d map[string]any) { delete(d, "ensure"); d["manifest"] = []any{1} }, `field "manifest" must be an object`),
		Entry("ensure without type", func(d map[string]any) { delete(d["ensure"].(map[string]any), "type") }, `field "ensure": field "type" is required`),
		Entry("ensure with a wrong protocol", func(d map[string]any) { d["ensure"].(map[string]any)["protocol"] = "x" }, `field "ensure": field "protocol"`),
		Entry("ensure with an unknown field", func(d map[string]any) { d["ensure"].(map[string]any)["typo"] = 1 }, `unknown field "typo"`),
		Entry("bad target", func(d map[string]any) { d["targets"] = []any{"web1", "web 2"} }, `field "targets[1]": identity "web 2": character ' ' at position 3`),
		Entry("too many targets", func(d map[string]any) { d["targets"] = manyIdentities(10001) }, `field "targets": 10001 identities, the limit is 10000`),
		Entry("filter with a bad regex", func(d map[string]any) {
			d["filter"] = map[string]any{"where": []any{map[string]any{"key": "os", "op": "=~", "value": "["}}}
		}, "field \"filter\": filter \"os=~[\": invalid regular expression: missing closing ]"),
		Entry("filter with an unknown operator", func(d map[string]any) {
			d["filter"] = map[string]any{"where": []any{map[string]any{"key": "os", "op": "==", "value": "x"}}}
		}, `field "filter": filter "os==x": unknown operator "=="`),
		Entry("filter with a bad host", func(d map[string]any) { d["filter"] = map[string]any{"hosts": []any{"-x"}} }, `field "filter": host "-x": must not start with '-'`),
	)

	It("accepts the maximum number of targets", func() {
		doc := fleetDoc()
		doc["targets"] = manyIdentities(10000)
		_, err := protocol.DecodeFleetRequest(encode(doc), protocol.Limits{})
		Expect(err).ToNot(HaveOccurred())
	})

	It("applies the size limit", func() {
		_, err := protocol.DecodeFleetRequest(encode(fleetDoc()), protocol.Limits{MaxBytes: 64})
		Expect(err).To(MatchError(protocol.ErrTooLarge))
	})
})

var _ = Describe("Duration", func() {
	DescribeTable("decodes duration strings and integer nanoseconds",
		func(in string, want time.Duration) {
			var d protocol.Duration
			Expect(json.Unmarshal([]byte(in), &d)).To(Succeed())
			Expect(time.Duration(d)).To(Equal(want))
		},
		Entry("seconds", `"30s"`, 30*time.Second),
		Entry("compound", `"1m30s"`, 90*time.Second),
		Entry("nanoseconds", `1500000000`, 1500*time.Millisecond),
	)

	It("refuses other values and encodes as a string", func() {
		var d protocol.Duration
		Expect(json.Unmarshal([]byte(`"soon"`), &d)).To(MatchError(ContainSubstring(`invalid duration "soon"`)))
		Expect(json.Unmarshal([]byte(`[1]`), &d)).To(HaveOccurred())
		b, err := json.Marshal(protocol.Duration(2 * time.Minute))
		Expect(err).ToNot(HaveOccurred())
		Expect(string(b)).To(Equal(`"2m0s"`))
		Expect(protocol.Duration(time.Second).String()).To(Equal("1s"))
	})
})

var _ = Describe("FleetReply", func() {
	It("always writes the events list and round trips strictly", func() {
		started := time.Date(2025, 3, 1, 10, 0, 1, 0, time.UTC)
		r := protocol.NewFleetReply("r1", "web1.example.com", started)
		r.Events = nil
		b, err := json.Marshal(r)
		Expect(err).ToNot(HaveOccurred())
		Expect(b).To(MatchJSON(`{"protocol":"io.choria.ccm.v1.fleet.reply","request_id":"r1","identity":"web1.example.com","started":"2025-03-01T10:00:01Z","duration":0,"events":[]}`))

		ev := protocol.NewTransactionEvent("e1", protocol.TypeService, "nginx", "")
		ev.Changed = true
		r.Events = []*protocol.TransactionEvent{ev}
		r.Duration = 1500 * time.Millisecond
		b, err = json.Marshal(*r)
		Expect(err).ToNot(HaveOccurred())
		back, err := protocol.DecodeFleetReply(b, protocol.Limits{})
		Expect(err).ToNot(HaveOccurred())
		Expect(back.Duration).To(Equal(1500 * time.Millisecond))
		Expect(back.Started).To(BeTemporally("==", started))
		Expect(back.Events).To(HaveLen(1))
		Expect(back.Events[0].Outcome()).To(Equal("changed"))
	})

	It("carries a request-level error", func() {
		r := protocol.NewFleetReply("r1", "web1", time.Now())
		r.Error = protocol.NewError(protocol.CodeExpired, "request %s expired %s ago", "r1", time.Second)
		b, err := json.Marshal(r)
		Expect(err).ToNot(HaveOccurred())
		back, err := protocol.DecodeFleetReply(b, protocol.Limits{})
		Expect(err).ToNot(HaveOccurred())
		Expect(back.Error).To(Equal(&protocol.Error{Code: protocol.CodeExpired, Message: "request r1 expired 1s ago"}))
	})

	DescribeTable("refuses bad replies, naming the field",
		func(doc, want string) {
			_, err := protocol.DecodeFleetReply([]byte(doc), protocol.Limits{})
			Expect(err).To(MatchError(protocol.ErrBadRequest))
			Expect(err.Error()).To(ContainSubstring(want))
		},
		Entry("unknown field", `{"protocol":"io.choria.ccm.v1.fleet.reply","request_id":"r","identity":"h","events":[],"extra":1}`, `unknown field "extra"`),
		Entry("wrong protocol", `{"protocol":"io.choria.ccm.v1.fleet.request","request_id":"r","identity":"h"}`, `field "protocol": expected "io.choria.ccm.v1.fleet.reply"`),
		Entry("missing request id", `{"protocol":"io.choria.ccm.v1.fleet.reply","identity":"h"}`, `field "request_id": request id must not be empty`),
		Entry("bad identity", `{"protocol":"io.choria.ccm.v1.fleet.reply","request_id":"r","identity":"a b"}`, `field "identity": identity "a b"`),
		Entry("started not a time", `{"protocol":"io.choria.ccm.v1.fleet.reply","request_id":"r","identity":"h","started":"noon"}`, `field "started": expected an RFC 3339 time`),
		Entry("duration a string", `{"protocol":"io.choria.ccm.v1.fleet.reply","request_id":"r","identity":"h","duration":"1s"}`, `field "duration": expected a whole number`),
		Entry("negative duration", `{"protocol":"io.choria.ccm.v1.fleet.reply","request_id":"r","identity":"h","duration":-1}`, `field "duration": must not be negative`),
		Entry("error without code", `{"protocol":"io.choria.ccm.v1.fleet.reply","request_id":"r","identity":"h","error":{"code":"","message":"x"}}`, `field "error": code is required`),
		Entry("null event", `{"protocol":"io.choria.ccm.v1.fleet.reply","request_id":"r","identity":"h","events":[null]}`, `field "events" item 0: null`),
		Entry("unknown field spelled with an escape", `{"protocol":"io.choria.ccm.v1.fleet.reply","request_id":"r","identity":"h","\u0065xtra":1}`, `unknown field "extra"`),
		Entry("unknown field after a tricky string", `{"protocol":"io.choria.ccm.v1.fleet.reply","request_id":"r","identity":"h","events":[],"error":{"code":"x","message":"a \\\"b\":{"},"extra":1}`, `unknown field "extra"`),
		Entry("trailing data", `{"protocol":"io.choria.ccm.v1.fleet.reply","request_id":"r","identity":"h"} {}`, `unexpected data after the document`),
		Entry("invalid JSON", `{"protocol":"io.choria.ccm.v1.fleet.reply","request_id":"r",}`, `invalid JSON`),
		Entry("nesting too deep", `{"protocol":"io.choria.ccm.v1.fleet.reply","request_id":"r","identity":"h","events":[{"properties":`+strings.Repeat("[", 40)+strings.Repeat("]", 40)+`}]}`, `nests deeper than`),
		Entry("too large", `{"protocol":"io.choria.ccm.v1.fleet.reply","request_id":"r","identity":"h","events":[{"name":"`+strings.Repeat("x", 2<<20)+`"}]}`, `limit`),
	)

	It("reads strings whatever they hold", func() {
		doc := `{"protocol":"io.choria.ccm.v1.fleet.reply","request_id":"r","identity":"h","events":[{"type":"file","name":"a \"}\": [","properties":{"x":1},"status":{"type":"file","name":"a","ensure":"present","metadata":{"name":"a","provider":"posix"}}}],"error":{"code":"busy","message":"m"}}`
		r, err := protocol.DecodeFleetReply([]byte(doc), protocol.Limits{})
		Expect(err).ToNot(HaveOccurred())
		Expect(r.Protocol).To(Equal(protocol.FleetReplyProtocol))
		Expect(r.Events).To(HaveLen(1))
		Expect(r.Events[0].Name).To(Equal(`a "}": [`))
		Expect(r.Events[0].Properties).To(BeEquivalentTo(`{"x":1}`))
		Expect(r.Events[0].Status).To(BeAssignableToTypeOf(&protocol.FileState{}))
		Expect(r.Events[0].Status.Common().Ensure).To(Equal("present"))
		Expect(r.Error.Code).To(Equal(protocol.CodeBusy))
	})

	DescribeTable("refuses keys in another case and unknown keys at every level, naming them",
		func(doc, field string) {
			_, err := protocol.DecodeFleetReply([]byte(doc), protocol.Limits{})
			var pe *protocol.Error
			Expect(errors.As(err, &pe)).To(BeTrue(), "%v", err)
			Expect(pe.Code).To(Equal(protocol.CodeBadRequest))
			Expect(pe.Field).To(Equal(field))
			Expect(pe.UnknownKey()).To(BeTrue())
		},
		Entry("top level", `{"Protocol":"io.choria.ccm.v1.fleet.reply","request_id":"r","identity":"h"}`, "Protocol"),
		Entry("in an event", `{"protocol":"io.choria.ccm.v1.fleet.reply","request_id":"r","identity":"h","events":[{"type":"file","future_field":1}]}`, "events[0].future_field"),
		Entry("in a status", `{"protocol":"io.choria.ccm.v1.fleet.reply","request_id":"r","identity":"h","events":[{"type":"file","status":{"type":"file","Ensure":"present"}}]}`, "events[0].status.Ensure"),
		Entry("in the error", `{"protocol":"io.choria.ccm.v1.fleet.reply","request_id":"r","identity":"h","error":{"code":"busy","Message":"m"}}`, "error.Message"),
	)
})

var _ = Describe("AsError", func() {
	DescribeTable("classifies errors by code",
		func(err error, want *protocol.Error) { Expect(protocol.AsError(err)).To(Equal(want)) },
		Entry("nil", nil, nil),
		Entry("an *Error", fmt.Errorf("wrapped: %w", protocol.NewError(protocol.CodeBusy, "queue full")), &protocol.Error{Code: protocol.CodeBusy, Message: "queue full"}),
		Entry("a bad request", protocol.ValidateIdentity(""), &protocol.Error{Code: protocol.CodeBadRequest, Message: `identity "": must not be empty`}),
		Entry("anything else", errors.New("disk on fire"), &protocol.Error{Code: protocol.CodeInternal, Message: "disk on fire"}),
	)

	It("has stable codes for the fleet layer", func() {
		Expect(string(protocol.CodeUnauthenticated)).To(Equal("unauthenticated"))
		Expect(string(protocol.CodeClockSkew)).To(Equal("clock_skew"))
		Expect(string(protocol.CodeDuplicate)).To(Equal("duplicate"))
	})
})

func manyIdentities(n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = fmt.Sprintf("host%d.example.com", i)
	}
	return out
}
