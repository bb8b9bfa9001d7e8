package redact_test

import (
	"encoding/json"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/redact"
)

// typedProps is a resource type's properties as the engine holds them:
// typed, the common ones embedded.
type typedProps struct {
	resources.CommonProperties
	Owner    string                  `json:"owner,omitempty"`
	Mode     string                  `json:"mode,omitempty"`
	Content  string                  `json:"content,omitempty"`
	Env      []string                `json:"environment,omitempty"`
	Returns  []int                   `json:"returns,omitempty"`
	Headers  map[string]string       `json:"headers,omitempty"`
	Data     map[string]any          `json:"data,omitempty"`
	Rules    json.RawMessage         `json:"rules,omitempty"`
	Nested   *struct{ Token string } `json:"nested,omitempty"`
	internal string
}

func (p *typedProps) Validate() error { return nil }

var _ = Describe("Redacting typed values", func() {
	newProps := func() *typedProps {
		return &typedProps{
			CommonProperties: resources.CommonProperties{Name: "/srv/app.conf", Ensure: "present"},
			Owner:            canary, Mode: "0600", Content: "password=" + canary,
			Env: []string{"A=1", "TOKEN=" + canary}, Returns: []int{0, 3},
			Headers:  map[string]string{"Authorization": "Bearer " + canary},
			Data:     map[string]any{"list": []any{"x", canary}, "n": 3},
			Rules:    json.RawMessage(`{"command":{"echo ` + canary + `":{}}}`),
			Nested:   &struct{ Token string }{Token: canary},
			internal: canary,
		}
	}

	It("keeps the engine's properties typed: a redacted copy, marked sensitive, the original untouched", func() {
		p := newProps()
		before := encoded(p)
		ev := protocol.NewTransactionEvent("e1", protocol.TypeFile, p.Name, "")
		ev.Properties = p
		redact.Event(ev, secrets())

		red, ok := ev.Properties.(*typedProps)
		Expect(ok).To(BeTrue(), "properties are %T, not the typed value", ev.Properties)
		Expect(red).ToNot(BeIdenticalTo(p))
		Expect(encoded(p)).To(Equal(before), "the engine's own properties changed")
		Expect(encoded(ev)).ToNot(ContainSubstring(canary))

		Expect(red.Sensitive).To(BeTrue())
		Expect(red.Name).To(Equal("/srv/app.conf"))
		Expect(red.Ensure).To(Equal("present"))
		Expect(red.Mode).To(Equal("0600"))
		Expect(red.Owner).To(Equal(redact.Marker), "a secret property")
		Expect(red.Content).To(Equal(protocol.SensitiveValue), "content is never recorded")
		Expect(red.Env).To(Equal([]string{protocol.SensitiveValue, protocol.SensitiveValue}))
		Expect(red.Returns).To(Equal([]int{0, 3}))
		// Below a content-bearing property, keys are content too (a goss
		// rule's key is a command line); keys made one keep the value of
		// the first in sorted order.
		Expect(red.Headers).To(Equal(map[string]string{protocol.SensitiveValue: protocol.SensitiveValue}))
		Expect(red.Data).To(Equal(map[string]any{protocol.SensitiveValue: []any{protocol.SensitiveValue, protocol.SensitiveValue}}))
		Expect(string(red.Rules)).To(Equal(`"` + protocol.SensitiveValue + `"`))
		Expect(red.Nested.Token).To(Equal(protocol.SensitiveValue))
		Expect(red.Nested).ToNot(BeIdenticalTo(p.Nested))
	})

	It("replaces a secret held by a visible property, and keeps the rest of it", func() {
		p := newProps()
		p.Owner = "root"
		p.Mode = "mode-" + canary
		ev := protocol.NewTransactionEvent("e1", protocol.TypeFile, p.Name, "")
		ev.Properties = p
		redact.Event(ev, redact.New("file#/srv/app.conf", true))
		red := ev.Properties.(*typedProps)
		Expect(red.Owner).To(Equal("root"))
		Expect(red.Mode).To(Equal("mode-"+canary), "no secret value is known: a visible attribute stays")

		s := redact.New("file#/srv/app.conf", true)
		s.AddValues(canary)
		ev.Properties = p
		redact.Event(ev, s)
		Expect(ev.Properties.(*typedProps).Mode).To(Equal(redact.Marker))
	})

	It("keeps a typed state typed, of its own type, its output replaced, the original untouched", func() {
		code := 3
		st := &protocol.ExecState{CommonState: protocol.NewCommonState(protocol.TypeExec, "/bin/rotate", "present")}
		st.ExitCode = &code
		st.Metadata = &protocol.ExecMetadata{Name: "/bin/rotate", Provider: "posix", Output: "out " + canary}
		ev := protocol.NewTransactionEvent("e1", protocol.TypeExec, "/bin/rotate", "")
		ev.Status = st
		redact.Event(ev, secrets())

		red, ok := ev.Status.(*protocol.ExecState)
		Expect(ok).To(BeTrue(), "status is %T", ev.Status)
		Expect(red).ToNot(BeIdenticalTo(st))
		Expect(red.Metadata.Output).To(Equal(redact.Marker))
		Expect(*red.ExitCode).To(Equal(3))
		Expect(red.Name).To(Equal("/bin/rotate"))
		Expect(st.Metadata.Output).To(Equal("out "+canary), "the provider's state changed")
	})

	It("is idempotent on typed values, and a nil typed value becomes the sensitive mark", func() {
		ev := protocol.NewTransactionEvent("e1", protocol.TypeFile, "/srv/app.conf", "")
		ev.Properties = newProps()
		redact.Event(ev, secrets())
		first := encoded(ev)
		redact.Event(ev, secrets())
		Expect(encoded(ev)).To(Equal(first))
		redact.Event(ev, redact.EventSecrets(ev))
		Expect(encoded(ev)).To(Equal(first))

		ev.Properties = (*typedProps)(nil)
		redact.Event(ev, secrets())
		Expect(ev.Properties).To(Equal(map[string]any{"sensitive": true}))
	})

	It("redacts properties passed on as a map or as JSON the same way, in a copy", func() {
		m := map[string]any{"name": "/srv/app.conf", "owner": "root", "content": "x", "environment": []any{"TOKEN=" + canary}, "returns": []any{0.0, 3.0}}
		for _, given := range []any{m, json.RawMessage(encoded(m))} {
			ev := protocol.NewTransactionEvent("e1", protocol.TypeExec, "/srv/app.conf", "")
			ev.Properties = given
			redact.Event(ev, redact.EventSecrets(&protocol.TransactionEvent{Properties: map[string]any{"sensitive": true}}))
			Expect(ev.Properties).To(Equal(map[string]any{
				"name": "/srv/app.conf", "owner": "root", "content": protocol.SensitiveValue, "sensitive": true,
				"environment": []any{protocol.SensitiveValue}, "returns": []any{0.0, 3.0},
			}))
		}
		Expect(m["content"]).To(Equal("x"), "the given map changed")
	})
})
