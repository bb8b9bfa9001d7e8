package engine_test

import (
	"context"
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/engine"
	"github.com/ccm-fleet/ccm/resources/templates"
)

var _ = Describe("Engine", func() {
	var (
		typ       *probeType
		reg       *resources.Registry
		eng       *engine.Engine
		instances int
		env       *templates.Env
		ctx       = context.Background()
	)

	BeforeEach(func() {
		typ = &probeType{}
		instances = 0
		reg = resources.NewRegistry()
		Expect(reg.RegisterType(typ)).To(Succeed())
		Expect(reg.RegisterProvider(probeFactory{name: "probe", manage: true, instances: &instances})).To(Succeed())
		Expect(reg.RegisterProvider(probeFactory{name: "never", manage: false})).To(Succeed())
		eng = engine.New(reg)
		env = templates.New(map[string]any{"os": "linux", "virtual": "docker", "hostname": "web1"}, map[string]any{"motd": "hi"})
	})

	ensure := func(noop bool, props map[string]any) (*protocol.TransactionEvent, error) {
		return eng.Ensure(ctx, engine.RunOptions{Noop: noop, Env: env}, engine.Spec{Type: "file", Properties: props})
	}

	Describe("a guard", func() {
		It("sees the resource as it will run: templates expanded, provider chosen", func() {
			var seen []string
			guard := func(p *engine.Prepared) error {
				seen = append(seen, p.Ref()+" via "+p.Provider())
				return nil
			}
			ev, err := eng.Ensure(ctx, engine.RunOptions{Env: env, Guard: guard}, engine.Spec{Type: "file", Properties: map[string]any{"name": "/tmp/{{ facts.hostname }}"}})
			Expect(err).ToNot(HaveOccurred())
			Expect(ev.Failed).To(BeFalse())
			Expect(seen).To(Equal([]string{"file#/tmp/web1 via probe"}))
		})

		It("refuses before anything is applied, naming the resource", func() {
			guard := func(p *engine.Prepared) error {
				return fmt.Errorf("%w: not %s", resources.ErrForbidden, p.Name())
			}
			_, err := eng.Ensure(ctx, engine.RunOptions{Env: env, Guard: guard}, engine.Spec{Type: "file", Properties: map[string]any{"name": "/tmp/x"}})
			Expect(err).To(MatchError(resources.ErrForbidden))
			Expect(err).To(MatchError("file#/tmp/x: forbidden: not /tmp/x"))
			Expect(typ.applied).To(BeEmpty())
			Expect(instances).To(BeZero(), "no provider was even made")
		})

		It("is not asked about a resource control conditions leave unmanaged", func() {
			asked := 0
			guard := func(*engine.Prepared) error { asked++; return resources.ErrForbidden }
			ev, err := eng.Ensure(ctx, engine.RunOptions{Env: env, Guard: guard}, engine.Spec{Type: "file", Properties: map[string]any{"name": "/tmp/x", "control": map[string]any{"if": "false"}}})
			Expect(err).ToNot(HaveOccurred())
			Expect(ev.Skipped).To(BeTrue())
			Expect(asked).To(BeZero())
		})
	})

	// A resource is managed when control.if (if set) is true and
	// control.unless (if set) is false.
	DescribeTable("control if/unless decide whether a resource is managed",
		func(ifExpr, unlessExpr string, managed bool) {
			props := map[string]any{"name": "/tmp/x"}
			control := map[string]any{}
			if ifExpr != "" {
				control["if"] = ifExpr
			}
			if unlessExpr != "" {
				control["unless"] = unlessExpr
			}
			if len(control) > 0 {
				props["control"] = control
			}
			ev, err := ensure(false, props)
			Expect(err).ToNot(HaveOccurred())
			Expect(ev.Skipped).To(Equal(!managed))
			Expect(typ.applied).To(HaveLen(map[bool]int{true: 1, false: 0}[managed]))
		},
		Entry("(not set) (not set) -> yes", "", "", true),
		Entry("true (not set) -> yes", "facts.os == 'linux'", "", true),
		Entry("false (not set) -> no", "facts.os == 'windows'", "", false),
		Entry("(not set) true -> no", "", "facts.virtual == 'docker'", false),
		Entry("(not set) false -> yes", "", "facts.virtual == 'kvm'", true),
		Entry("true true -> no", "facts.os == 'linux'", "facts.virtual == 'docker'", false),
		Entry("true false -> yes", "facts.os == 'linux'", "facts.virtual == 'kvm'", true),
		Entry("false true -> no", "facts.os == 'windows'", "facts.virtual == 'docker'", false),
		Entry("false false -> no", "facts.os == 'windows'", "facts.virtual == 'kvm'", false),
	)

	It("expands templates in properties but not in conditions", func() {
		ev, err := ensure(false, map[string]any{
			"name":    "/srv/{{ lookup('facts.hostname') }}/motd",
			"content": "{{ lookup('data.motd') }}",
			"control": map[string]any{"if": "lookup('facts.hostname') == 'web1'"},
		})
		Expect(err).ToNot(HaveOccurred())
		Expect(ev.Name).To(Equal("/srv/web1/motd"))
		Expect(ev.Properties.(*probeProps).Content).To(Equal("hi"))
	})

	DescribeTable("refuses bad input before anything is applied",
		func(props map[string]any, problem string) {
			ev, err := ensure(false, props)
			Expect(err).To(MatchError(resources.ErrInvalid))
			Expect(err.Error()).To(ContainSubstring(problem))
			Expect(ev).To(BeNil())
			Expect(typ.applied).To(BeEmpty())
		},
		Entry("unknown property", map[string]any{"name": "/x", "colour": "red"}, `file#/x: invalid resource: unknown property "colour"`),
		Entry("wrong type", map[string]any{"name": "/x", "count": "three"}, `property "count": expected a whole number, got string`),
		Entry("type validation", map[string]any{"name": "/x", "count": -1}, "property count: must not be negative"),
		Entry("missing name", map[string]any{"content": "x"}, "property name is required"),
		Entry("template error", map[string]any{"name": "/x", "content": "{{ lookup('data.nope') }}"}, `property content`),
		Entry("condition error", map[string]any{"name": "/x", "control": map[string]any{"if": "facts.os"}}, "control.if"),
		Entry("unknown provider", map[string]any{"name": "/x", "provider": "bash"}, `unknown provider "bash"`),
		Entry("Provider in another case", map[string]any{"name": "/x", "Provider": "shell"}, `file#/x: invalid resource: unknown property "Provider"`),
		Entry("PROVIDER", map[string]any{"name": "/x", "PROVIDER": "shell"}, `unknown property "PROVIDER"`),
		Entry("NAME", map[string]any{"NAME": "/etc/passwd"}, `unknown property "NAME"`),
		Entry("nAme next to name", map[string]any{"name": "/x", "nAme": "/etc/passwd"}, `unknown property "nAme"`),
		Entry("enſure (long s folds to s)", map[string]any{"name": "/x", "enſure": "absent"}, `unknown property "enſure"`),
		Entry("Content", map[string]any{"name": "/x", "Content": "hi"}, `unknown property "Content"`),
		Entry("a nested key in another case", map[string]any{"name": "/x", "control": map[string]any{"If": "true"}}, `unknown property "control.If"`),
	)

	It("refuses unknown types", func() {
		_, err := eng.Ensure(ctx, engine.RunOptions{Env: env}, engine.Spec{Type: "nope", Properties: map[string]any{"name": "x"}})
		Expect(err).To(MatchError(resources.ErrUnknownType))
	})

	It("fills the event and the state from the outcome", func() {
		ev, err := ensure(false, map[string]any{"name": "/x", "password": "s3cret"})
		Expect(err).ToNot(HaveOccurred())
		Expect(ev.Protocol).To(Equal(protocol.TransactionEventProtocol))
		Expect(ev.EventID).To(HaveLen(32))
		Expect(ev.Provider).To(Equal("probe"))
		Expect(ev.RequestedEnsure).To(Equal("present"), "the type's default ensure")
		Expect(ev.FinalEnsure).To(Equal("present"))
		Expect(ev.Changed).To(BeTrue())
		Expect(ev.NoopMessage).To(BeEmpty())
		Expect(ev.Status.Common().Changed).To(BeTrue())
		Expect(ev.Status.Common().Stable).To(BeTrue(), "the state after a successful change is the desired one, as CCM reports it")
		Expect(ev.Properties.(*probeProps).Password).To(Equal("[redacted]"))
	})

	It("reports noop messages only under noop", func() {
		ev, err := ensure(true, map[string]any{"name": "/x"})
		Expect(err).ToNot(HaveOccurred())
		Expect(ev.Noop).To(BeTrue())
		Expect(ev.NoopMessage).To(Equal("Would have created the file"))
		Expect(ev.Status.Common().NoopMessage).To(Equal("Would have created the file"))
		Expect(ev.Status.Common().Stable).To(BeFalse(), "under noop a resource that would change is not stable")
		Expect(typ.applied[0].Noop).To(BeTrue())
	})

	It("records a failed resource in the event, not as a request error", func() {
		ev, err := ensure(false, map[string]any{"name": "/x", "fail": true})
		Expect(err).ToNot(HaveOccurred())
		Expect(ev.Failed).To(BeTrue())
		Expect(ev.Errors).To(ConsistOf(ContainSubstring("desired state not achieved")))
		// As CCM: a failed resource carries no status and no final ensure.
		Expect(ev.Status).To(BeNil())
		Expect(ev.FinalEnsure).To(BeEmpty())
	})

	It("fails the resource when no provider can manage it", func() {
		ev, err := ensure(false, map[string]any{"name": "/x", "provider": "never"})
		Expect(err).ToNot(HaveOccurred())
		Expect(ev.Failed).To(BeTrue())
		Expect(ev.Errors[0]).To(ContainSubstring("no suitable provider"))
		Expect(typ.applied).To(BeEmpty())
	})

	It("makes one provider instance per session and passes refresh through", func() {
		s := eng.NewSession(engine.RunOptions{Env: env, WorkingDir: "/srv"})
		for _, name := range []string{"/a", "/b"} {
			p, err := s.Prepare(engine.Spec{Type: "file", Properties: map[string]any{"name": name}})
			Expect(err).ToNot(HaveOccurred())
			Expect(p.Ref()).To(Equal("file#" + name))
			s.Apply(ctx, p, engine.ApplyOptions{Refresh: name == "/b"})
		}
		Expect(instances).To(Equal(1))
		Expect(typ.applied[0].Refresh).To(BeFalse())
		Expect(typ.applied[1].Refresh).To(BeTrue())
		Expect(typ.applied[1].WorkingDir).To(Equal("/srv"))
	})
})
