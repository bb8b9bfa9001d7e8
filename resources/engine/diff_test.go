package engine_test

import (
	"context"
	"encoding/json"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/engine"
	"github.com/ccm-fleet/ccm/resources/redact"
	"github.com/ccm-fleet/ccm/resources/templates"
)

var _ = Describe("Engine diffs", func() {
	var (
		eng *engine.Engine
		ctx = context.Background()
	)
	BeforeEach(func() {
		reg := resources.NewRegistry()
		Expect(reg.RegisterType(&probeType{})).To(Succeed())
		Expect(reg.RegisterProvider(probeFactory{name: "probe", manage: true})).To(Succeed())
		eng = engine.New(reg)
	})
	ensure := func(env *templates.Env, props map[string]any) *protocol.TransactionEvent {
		GinkgoHelper()
		ev, err := eng.Ensure(ctx, engine.RunOptions{Noop: true, Env: env}, engine.Spec{Type: "file", Properties: props})
		Expect(err).NotTo(HaveOccurred())
		return ev
	}
	encoded := func(ev *protocol.TransactionEvent) string {
		GinkgoHelper()
		b, err := json.Marshal(ev)
		Expect(err).NotTo(HaveOccurred())
		return string(b)
	}

	It("puts the outcome's diff in the event", func() {
		ev := ensure(nil, map[string]any{"name": "/a", "content": "new"})
		Expect(ev.Diff.Content).To(Equal("-old\n+new\n"))
		Expect(ev.Diff.Sensitive).To(BeFalse())
	})

	It("redacts the diff and every content-bearing property of a sensitive resource, after the type's own redaction", func() {
		ev := ensure(nil, map[string]any{"name": "/a", "content": "CANARY-1", "password": "CANARY-2", "sensitive": true})
		Expect(ev.Diff.Content).To(BeEmpty())
		Expect(ev.Diff.Summary).To(Equal(protocol.DiffSensitive))
		Expect(ev.Diff.Changes).To(Equal([]protocol.Change{{Field: "mode", From: "0600", To: "0644"}, {Field: "download", To: "[sensitive]"}}))
		Expect(wireProperties(ev)).To(HaveKeyWithValue("content", "[sensitive]"))
		Expect(wireProperties(ev)).To(HaveKeyWithValue("password", "[sensitive]"))
		Expect(wireProperties(ev)).To(HaveKeyWithValue("name", "/a"))
		Expect(encoded(ev)).NotTo(ContainSubstring("CANARY"))
	})

	It("makes a resource whose template reads sensitive data sensitive", func() {
		env := templates.New(nil, map[string]any{"pw": "CANARY-3", "motd": "hello"}, templates.WithSensitive([]string{"pw"}))
		ev := ensure(env, map[string]any{"name": "/a", "content": "{{ data.pw }}"})
		Expect(ev.Diff.Sensitive).To(BeTrue())
		Expect(wireProperties(ev)).To(HaveKeyWithValue("sensitive", true))
		Expect(encoded(ev)).NotTo(ContainSubstring("CANARY"))

		ev = ensure(env, map[string]any{"name": "/b", "content": "{{ data.motd }}"})
		Expect(ev.Diff.Sensitive).To(BeFalse())
		Expect(ev.Diff.Content).To(ContainSubstring("+hello"))
	})

	It("makes decoded properties that hold a sensitive value sensitive, and only those", func() {
		decoded := func(env *templates.Env, props map[string]any) *protocol.TransactionEvent {
			GinkgoHelper()
			p, err := engine.DecodeMap(&probeType{}, props)
			Expect(err).NotTo(HaveOccurred())
			ev, err := eng.Ensure(ctx, engine.RunOptions{Noop: true, Env: env}, engine.Spec{Type: "file", Decoded: p})
			Expect(err).NotTo(HaveOccurred())
			return ev
		}
		marked := templates.New(nil, map[string]any{"pw": "CANARY-4"}, templates.WithSensitive([]string{"pw"}))
		ev := decoded(marked, map[string]any{"name": "/a", "content": "pw=CANARY-4"})
		Expect(ev.Diff.Sensitive).To(BeTrue())
		Expect(encoded(ev)).NotTo(ContainSubstring("CANARY"))

		ev = decoded(marked, map[string]any{"name": "/a", "content": "pw=other"})
		Expect(ev.Diff.Sensitive).To(BeFalse())
		Expect(ev.Diff.Content).To(ContainSubstring("+pw=other"))

		unmarked := templates.New(nil, map[string]any{"pw": "CANARY-4"})
		ev = decoded(unmarked, map[string]any{"name": "/a", "content": "pw=CANARY-4"})
		Expect(ev.Diff.Sensitive).To(BeFalse())
		Expect(ev.Diff.Content).To(ContainSubstring("+pw=CANARY-4"))
	})

	It("cuts a long content diff at a line end and says so", func() {
		long := strings.Repeat("line of text\n", protocol.MaxDiffBytes/10)
		ev := ensure(nil, map[string]any{"name": "/a", "content": long})
		Expect(len(ev.Diff.Content)).To(BeNumerically("<=", protocol.MaxDiffBytes))
		Expect(ev.Diff.Content).To(HaveSuffix("\n"))
		Expect(ev.Diff.Truncated).To(BeTrue())
	})
})

var _ = Describe("Events of resources reading sensitive data", func() {
	It("withholds a Prepare error naming a value read from sensitive data, keeping the error's class", func() {
		reg := resources.NewRegistry()
		Expect(reg.RegisterType(&probeType{})).To(Succeed())
		Expect(reg.RegisterProvider(probeFactory{name: "probe", manage: true})).To(Succeed())
		eng := engine.New(reg)
		env := templates.New(nil, map[string]any{"db": map[string]any{"user": "CANARY-provider-9"}}, templates.WithSensitive([]string{"db.user"}))
		_, err := eng.Ensure(context.Background(), engine.RunOptions{Env: env}, engine.Spec{Type: "file", Properties: map[string]any{"name": "/a", "provider": "{{ data.db.user }}"}})
		Expect(err).To(MatchError(resources.ErrInvalid))
		Expect(err).To(MatchError(resources.ErrUnknownProvider))
		Expect(err.Error()).To(Equal("file#/a: " + redact.Marker))
	})

	It("replaces the values of templated properties of a sensitive resource in its properties", func() {
		reg := resources.NewRegistry()
		Expect(reg.RegisterType(&probeType{})).To(Succeed())
		Expect(reg.RegisterProvider(probeFactory{name: "probe", manage: true})).To(Succeed())
		eng := engine.New(reg)
		env := templates.New(nil, map[string]any{"p": "probe"})
		ev, err := eng.Ensure(context.Background(), engine.RunOptions{Env: env}, engine.Spec{Type: "file", Properties: map[string]any{"name": "/a", "provider": "{{ data.p }}", "sensitive": true}})
		Expect(err).ToNot(HaveOccurred())
		Expect(wireProperties(ev)).To(HaveKeyWithValue("provider", redact.Marker))
		Expect(wireProperties(ev)).To(HaveKeyWithValue("name", "/a"))
		Expect(wireProperties(ev)).To(HaveKeyWithValue("sensitive", true))
	})
})

// wireProperties are an event's properties as they leave the host: the
// engine keeps them typed, redacted or not, until the reply is encoded.
func wireProperties(ev *protocol.TransactionEvent) map[string]any {
	GinkgoHelper()
	_, typed := ev.Properties.(resources.Properties)
	Expect(typed).To(BeTrue(), "the event's properties stay typed, not %T", ev.Properties)
	b, err := json.Marshal(ev.Properties)
	Expect(err).ToNot(HaveOccurred())
	var m map[string]any
	Expect(json.Unmarshal(b, &m)).To(Succeed())
	return m
}
