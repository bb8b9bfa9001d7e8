package resources_test

import (
	"context"
	"errors"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/resources"
)

type stubProps struct{ resources.CommonProperties }

func (p *stubProps) Validate() error { return p.ValidateCommon() }

type stubType struct{ name string }

func (t stubType) Name() string                      { return t.name }
func (stubType) DefaultEnsure() string               { return "present" }
func (stubType) NewProperties() resources.Properties { return &stubProps{} }
func (stubType) Apply(context.Context, *resources.ApplyContext, resources.Properties, resources.Provider) (*resources.Outcome, error) {
	return nil, nil
}

type stubFactory struct {
	typ, name string
	ok        bool
	prio      int
	explicit  bool
	err       error
}

func (f stubFactory) Type() string { return f.typ }
func (f stubFactory) Name() string { return f.name }
func (f stubFactory) IsManageable(map[string]any, resources.Properties) (bool, int, error) {
	return f.ok, f.prio, f.err
}
func (f stubFactory) New() (resources.Provider, error) { return nil, nil }
func (f stubFactory) ExplicitOnly() bool               { return f.explicit }

var _ = Describe("Registry", func() {
	var reg *resources.Registry
	props := &stubProps{resources.CommonProperties{Name: "x"}}

	BeforeEach(func() {
		reg = resources.NewRegistry()
		Expect(reg.RegisterType(stubType{"exec"})).To(Succeed())
	})

	It("refuses duplicate types and providers and providers of unknown types", func() {
		Expect(reg.RegisterType(stubType{"exec"})).To(MatchError(resources.ErrDuplicate))
		Expect(reg.RegisterProvider(stubFactory{typ: "exec", name: "posix"})).To(Succeed())
		Expect(reg.RegisterProvider(stubFactory{typ: "exec", name: "posix"})).To(MatchError(resources.ErrDuplicate))
		Expect(reg.RegisterProvider(stubFactory{typ: "nope", name: "x"})).To(MatchError(resources.ErrUnknownType))
	})

	It("names unknown types as invalid input", func() {
		_, err := reg.Type("nope")
		Expect(err).To(MatchError(resources.ErrInvalid))
		Expect(err).To(MatchError(resources.ErrUnknownType))
		Expect(err.Error()).To(ContainSubstring(`"nope"`))
	})

	DescribeTable("selects providers: lowest priority wins, explicit-only never automatically",
		func(factories []stubFactory, want, expect string, expectErr any) {
			for _, f := range factories {
				f.typ = "exec"
				Expect(reg.RegisterProvider(f)).To(Succeed())
			}
			f, err := reg.Select("exec", want, nil, props)
			if expectErr != nil {
				Expect(err).To(MatchError(expectErr))
				return
			}
			Expect(err).ToNot(HaveOccurred())
			Expect(f.Name()).To(Equal(expect))
		},
		Entry("lower number wins", []stubFactory{{name: "shell", ok: true, prio: 99}, {name: "posix", ok: true, prio: 1}}, "", "posix", nil),
		Entry("ties go to the first registered", []stubFactory{{name: "a", ok: true, prio: 1}, {name: "b", ok: true, prio: 1}}, "", "a", nil),
		Entry("unmanageable ones are passed over", []stubFactory{{name: "a", ok: false, prio: 1}, {name: "b", ok: true, prio: 5}}, "", "b", nil),
		Entry("explicit-only is never chosen automatically", []stubFactory{{name: "shell", ok: true, prio: 0, explicit: true}, {name: "posix", ok: true, prio: 1}}, "", "posix", nil),
		Entry("explicit-only is chosen by name", []stubFactory{{name: "shell", ok: true, prio: 99, explicit: true}, {name: "posix", ok: true, prio: 1}}, "shell", "shell", nil),
		Entry("an unknown name is invalid input", []stubFactory{{name: "posix", ok: true}}, "bash", "", resources.ErrUnknownProvider),
		Entry("a named provider that cannot manage", []stubFactory{{name: "posix", ok: false}}, "posix", "", resources.ErrNoSuitableProvider),
		Entry("none manageable", []stubFactory{{name: "posix", ok: false}}, "", "", resources.ErrNoSuitableProvider),
		Entry("a manageability error is reported", []stubFactory{{name: "posix", err: errors.New("boom")}}, "", "", "provider posix: boom"),
	)
})

var _ = Describe("CommonProperties", func() {
	DescribeTable("validates",
		func(p resources.CommonProperties, problem string) {
			err := p.ValidateCommon()
			if problem == "" {
				Expect(err).ToNot(HaveOccurred())
				return
			}
			Expect(err).To(MatchError(resources.ErrInvalid))
			Expect(err.Error()).To(ContainSubstring(problem))
		},
		Entry("valid", resources.CommonProperties{Name: "x", Ensure: "present", Require: []string{"file#/etc/motd"}}, ""),
		Entry("no name", resources.CommonProperties{Ensure: "present"}, "property name is required"),
		Entry("no ensure", resources.CommonProperties{Name: "x"}, "property ensure is required"),
		Entry("ensure with a space", resources.CommonProperties{Name: "x", Ensure: "1.0 ; rm"}, "not allowed"),
		Entry("NUL in name", resources.CommonProperties{Name: "a\x00b", Ensure: "present"}, "NUL"),
		Entry("bad require", resources.CommonProperties{Name: "x", Ensure: "present", Require: []string{"motd"}}, `property require: "motd" is not a type#name reference`),
		Entry("bad subscribe", resources.CommonProperties{Name: "x", Ensure: "present", Subscribe: []string{"File#x"}}, "property subscribe"),
	)

	It("parses references", func() {
		typ, name, ok := resources.ParseRef("file#/etc/nginx/nginx.conf")
		Expect(ok).To(BeTrue())
		Expect(typ).To(Equal("file"))
		Expect(name).To(Equal("/etc/nginx/nginx.conf"))
		_, _, ok = resources.ParseRef("nginx")
		Expect(ok).To(BeFalse())
	})
})
