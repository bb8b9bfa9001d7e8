package redact_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/redact"
)

const canary = "CANARY-7f3e-secret"

// outputError carries an output it can leave out.
type outputError struct{ output string }

func (e *outputError) Error() string { return "step failed: " + e.output }
func (e *outputError) RedactedError(s *redact.Secrets) string {
	return "step failed: " + s.Output(e.output)
}
func (e *outputError) Unwrap() error { return resources.ErrDesiredStateFailed }

// secrets of a sensitive resource whose owner was templated from canary.
func secrets() *redact.Secrets {
	s := redact.New("file#/srv/app.conf", true)
	s.AddProperty("owner")
	s.AddValues(canary)
	return s
}

// encoded is ev as it leaves: its JSON.
func encoded(v any) string {
	b, err := json.Marshal(v)
	Expect(err).ToNot(HaveOccurred())
	return string(b)
}

var _ = Describe("Secrets", func() {
	It("redacts nothing when the resource is not sensitive", func() {
		s := redact.New("exec#x", false)
		s.AddValues(canary)
		Expect(s.Output(canary)).To(Equal(canary))
		Expect(s.Value("owner", canary)).To(Equal(canary))
		var nilSecrets *redact.Secrets
		Expect(nilSecrets.Output(canary)).To(Equal(canary))
		Expect(nilSecrets.Holds(canary)).To(BeFalse())
	})

	It("redacts outputs, secret properties and values holding a secret", func() {
		s := secrets()
		Expect(s.Output("anything")).To(Equal(redact.Marker))
		Expect(s.Output("")).To(Equal(""))
		Expect(s.Value("owner", "bob")).To(Equal(redact.Marker))
		Expect(s.Value("group", "staff")).To(Equal("staff"))
		Expect(s.Value("", "user="+canary)).To(Equal(redact.Marker))
	})

	It("looks for short secret values only as whole values", func() {
		s := redact.New("file#/x", true)
		s.AddValues("abc")
		Expect(s.Holds("abc")).To(BeTrue())
		Expect(s.Holds("cabcd")).To(BeFalse())
	})
})

var _ = Describe("Error and Message", func() {
	It("render a Redactable error from its fields, keeping its shape and class", func() {
		err := redact.Error(&outputError{output: canary}, secrets())
		Expect(err.Error()).To(Equal("step failed: [redacted]"))
		Expect(errors.Is(err, resources.ErrDesiredStateFailed)).To(BeTrue())
		Expect(fmt.Errorf("outer: %w", err).Error()).To(Equal("outer: step failed: [redacted]"))
	})

	It("name the resource before a Redactable error found deeper in the chain", func() {
		err := fmt.Errorf("wrapped: %w", &outputError{output: canary})
		Expect(redact.Message(err, secrets())).To(Equal("file#/srv/app.conf: step failed: [redacted]"))
	})

	It("withhold an error whose text holds a secret value whole", func() {
		err := fmt.Errorf("chown: unknown user %s", canary)
		Expect(redact.Message(err, secrets())).To(Equal("file#/srv/app.conf: [redacted]"))
	})

	It("keep an error holding no secret as it is", func() {
		err := errors.New("permission denied")
		Expect(redact.Message(err, secrets())).To(Equal("permission denied"))
	})

	It("leave errors alone for a resource that is not sensitive", func() {
		err := &outputError{output: canary}
		Expect(redact.Error(err, redact.New("exec#x", false))).To(BeIdenticalTo(err))
		Expect(redact.Message(err, nil)).To(ContainSubstring(canary))
	})
})

var _ = Describe("Event", func() {
	var ev *protocol.TransactionEvent

	BeforeEach(func() {
		code := 3
		ev = protocol.NewTransactionEvent("e1", protocol.TypeExec, "/usr/local/bin/rotate", "")
		ev.Properties = map[string]any{"name": "/usr/local/bin/rotate", "sensitive": true, "owner": canary, "group": "root", "environment": []any{"TOKEN=" + canary}}
		st := &protocol.ExecState{CommonState: protocol.NewCommonState(protocol.TypeExec, "/usr/local/bin/rotate", "present")}
		st.ExitCode = &code
		st.Metadata = &protocol.ExecMetadata{Name: "/usr/local/bin/rotate", Provider: "posix", Output: "out " + canary}
		ev.Status = st
		ev.Errors = []string{"exec /usr/local/bin/rotate: desired state not achieved: exit code 3 is not one of [0]: [redacted]", "a message with " + canary}
		ev.HealthChecks = []*protocol.HealthCheckResult{{Name: "check", Command: "/usr/bin/check --token " + canary, Status: protocol.HealthCritical, Message: "health said " + canary}}
		ev.Diff = &protocol.Diff{Content: "-" + canary, Changes: []protocol.Change{{Field: "owner", From: "root", To: canary}, {Field: "mode", From: "0600", To: "0640"}}}
		ev.NoopMessage = "would write " + canary
	})

	It("leaves no secret in any part of a sensitive resource's event, keeping its shape", func() {
		redact.Event(ev, secrets())
		out := encoded(ev)
		Expect(out).ToNot(ContainSubstring(canary))
		Expect(ev.Name).To(Equal("/usr/local/bin/rotate"))
		Expect(ev.Errors[0]).To(HaveSuffix("exit code 3 is not one of [0]: [redacted]"))
		Expect(ev.Errors[1]).To(Equal("file#/srv/app.conf: [redacted]"))
		Expect(ev.HealthChecks[0].Message).To(Equal(redact.Marker))
		Expect(ev.HealthChecks[0].Status).To(Equal(protocol.HealthCritical))
		Expect(ev.Properties).To(HaveKeyWithValue("owner", redact.Marker))
		Expect(ev.Properties).To(HaveKeyWithValue("group", "root"))
		Expect(ev.Diff.Changes).To(ContainElement(protocol.Change{Field: "owner", From: redact.Marker, To: redact.Marker}))
		Expect(ev.Diff.Changes).To(ContainElement(protocol.Change{Field: "mode", From: "0600", To: "0640"}))
		Expect(ev.Status.(*protocol.ExecState).Metadata.Output).To(Equal(redact.Marker))
		Expect(*ev.Status.(*protocol.ExecState).ExitCode).To(Equal(3))
	})

	DescribeTable("keeps the status of every type, its content and secrets replaced",
		func(typeName, doc string) {
			st, err := protocol.DecodeState(typeName, []byte(doc))
			Expect(err).ToNot(HaveOccurred())
			e := protocol.NewTransactionEvent("e3", typeName, "x", "")
			e.Properties = map[string]any{"name": "x", "sensitive": true}
			e.Status = st
			redact.Event(e, secrets())
			Expect(e.Status).ToNot(BeNil())
			Expect(e.Status.Common().Name).To(Equal("x"))
			Expect(encoded(e)).ToNot(ContainSubstring(canary))
		},
		Entry("file", protocol.TypeFile, `{"type":"file","name":"x","ensure":"present","metadata":{"name":"x","owner":"`+canary+`","group":"root","mode":"0600","provider":"posix","mtime":"2026-01-01T00:00:00Z","size":3,"checksum":"abc"}}`),
		Entry("exec", protocol.TypeExec, `{"type":"exec","name":"x","ensure":"present","exitcode":0,"metadata":{"name":"x","provider":"posix","output":"`+canary+`"}}`),
		Entry("package", protocol.TypePackage, `{"type":"package","name":"x","ensure":"1.0"}`),
		Entry("service", protocol.TypeService, `{"type":"service","name":"x","ensure":"running"}`),
		Entry("archive", protocol.TypeArchive, `{"type":"archive","name":"x","ensure":"present"}`),
		Entry("scaffold", protocol.TypeScaffold, `{"type":"scaffold","name":"x","ensure":"present"}`),
	)

	It("is idempotent", func() {
		redact.Event(ev, secrets())
		first := encoded(ev)
		redact.Event(ev, secrets())
		Expect(encoded(ev)).To(Equal(first))
		redact.Event(ev, redact.EventSecrets(ev))
		Expect(encoded(ev)).To(Equal(first))
	})

	It("leaves the event of a resource that is not sensitive as it is", func() {
		before := encoded(ev)
		redact.Event(ev, redact.New("exec#x", false))
		Expect(encoded(ev)).To(Equal(before))
	})

	It("redacts by the event alone in a reply: outputs, health messages and content, whatever built it", func() {
		ev.Errors = nil
		ev.NoopMessage = ""
		ev.Properties = map[string]any{"name": "/usr/local/bin/rotate", "sensitive": true}
		ev.HealthChecks[0].Command = "/usr/bin/check"
		// Alone, an event does not say which property values are secret:
		// a content-bearing change is, an owner is not known to be.
		ev.Diff.Changes = []protocol.Change{{Field: "checksum", From: "", To: canary}}
		reply := protocol.NewFleetReply("r1", "web-1", ev.Timestamp)
		reply.Events = append(reply.Events, ev)
		redact.Reply(reply)
		Expect(encoded(reply)).ToNot(ContainSubstring(canary))
		Expect(ev.HealthChecks[0].Message).To(Equal(redact.Marker))
		Expect(ev.Diff.Sensitive).To(BeTrue())
	})

	It("recognises a sensitive resource from typed or encoded properties", func() {
		typed := &resources.CommonProperties{Name: "x", Sensitive: true}
		e := protocol.NewTransactionEvent("e2", protocol.TypeFile, "x", "")
		e.Properties = typed
		Expect(redact.EventSecrets(e).Active()).To(BeTrue())
		e.Properties = json.RawMessage(`{"name":"x","sensitive":true}`)
		Expect(redact.EventSecrets(e).Active()).To(BeTrue())
		e.Properties = map[string]any{"name": "x"}
		Expect(redact.EventSecrets(e).Active()).To(BeFalse())
	})
})

var _ = Describe("Logger", func() {
	It("redacts error values, strings and messages holding a secret, groups and With included", func() {
		var buf bytes.Buffer
		log := redact.Logger(slog.New(slog.NewJSONHandler(&buf, nil)), secrets()).With("user", canary)
		log.Error("failed", "error", &outputError{output: canary}, slog.Group("g", "value", "x"+canary), "count", 3)
		log.Info("wrote " + canary)
		out := buf.String()
		Expect(out).ToNot(ContainSubstring(canary))
		Expect(out).To(ContainSubstring(`"error":"step failed: [redacted]"`))
		Expect(out).To(ContainSubstring(`"count":3`))
		Expect(out).To(ContainSubstring(`"msg":"[redacted]"`))
	})

	It("returns the logger itself for a resource that is not sensitive", func() {
		l := slog.New(slog.DiscardHandler)
		Expect(redact.Logger(l, redact.New("x#y", false))).To(BeIdenticalTo(l))
	})
})
