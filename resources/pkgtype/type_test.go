package pkgtype_test

import (
	"context"
	"errors"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/pkgtype"
)

func props(name, ensure string) *pkgtype.Properties {
	p := &pkgtype.Properties{}
	p.Name = name
	p.Ensure = ensure
	return p
}

func apply(ctx context.Context, noop bool, p *pkgtype.Properties, prov resources.Provider) (*resources.Outcome, error) {
	return pkgtype.Type{}.Apply(ctx, &resources.ApplyContext{Noop: noop, Log: discardLogger()}, p, prov)
}

func ensureOf(out *resources.Outcome) string {
	Expect(out).NotTo(BeNil())
	st, ok := out.State.(*protocol.PackageState)
	Expect(ok).To(BeTrue(), "state is %T", out.State)
	return st.Ensure
}

var _ = Describe("Type", func() {
	It("is the package type with ensure present by default", func() {
		t := pkgtype.Type{}
		Expect(t.Name()).To(Equal("package"))
		Expect(t.DefaultEnsure()).To(Equal("present"))
		Expect(t.NewProperties()).To(BeAssignableToTypeOf(&pkgtype.Properties{}))
	})

	// present installs when absent; absent uninstalls when installed;
	// latest installs or always upgrades; a version installs, upgrades or
	// downgrades to it unless it is installed. Applied for real against the fake.
	DescribeTable("decision table",
		func(ctx context.Context, ensure, current, wantCall, wantFinal string, wantChanged bool) {
			f := newFake(current)
			out, err := apply(ctx, false, props("nginx", ensure), f)
			Expect(err).NotTo(HaveOccurred())
			if wantCall == "" {
				Expect(f.Mutations()).To(BeEmpty())
				Expect(f.Calls()).To(Equal([]string{"Status nginx"}))
			} else {
				Expect(f.Mutations()).To(Equal([]string{wantCall}))
				Expect(f.Calls()).To(Equal([]string{"Status nginx", wantCall, "Status nginx"}))
			}
			Expect(ensureOf(out)).To(Equal(wantFinal))
			Expect(out.Changed).To(Equal(wantChanged))
			Expect(out.NoopMessage).To(BeEmpty())
		},
		Entry("present, installed (any version): none", "present", "1.0", "", "1.0", false),
		Entry("present, absent: install", "present", "absent", "Install nginx present", "3.0", true),
		Entry("absent, absent: none", "absent", "absent", "", "absent", false),
		Entry("absent, installed: uninstall", "absent", "1.0", "Uninstall nginx", "absent", true),
		Entry("latest, absent: install latest", "latest", "absent", "Install nginx latest", "3.0", true),
		Entry("latest, installed: upgrade (always runs)", "latest", "1.0", "Upgrade nginx latest", "3.0", true),
		Entry("latest, installed at latest: upgrade still runs, nothing changes", "latest", "3.0", "Upgrade nginx latest", "3.0", false),
		Entry("<version>, same version: none", "2.0", "2.0", "", "2.0", false),
		Entry("<version>, older version: upgrade", "2.0", "1.0", "Upgrade nginx 2.0", "2.0", true),
		Entry("<version>, newer version: downgrade", "2.0", "3.0", "Downgrade nginx 2.0", "2.0", true),
		Entry("<version>, absent: install", "2.0", "absent", "Install nginx 2.0", "2.0", true),
	)

	DescribeTable("noop mode changes nothing and says what it would do",
		func(ctx context.Context, ensure, current, wantMessage string, wantChanged bool) {
			f := newFake(current)
			out, err := apply(ctx, true, props("nginx", ensure), f)
			Expect(err).NotTo(HaveOccurred())
			Expect(f.Calls()).To(Equal([]string{"Status nginx"}))
			Expect(ensureOf(out)).To(Equal(current))
			Expect(out.NoopMessage).To(Equal(wantMessage))
			Expect(out.Changed).To(Equal(wantChanged))
		},
		Entry("present, installed", "present", "1.0", "", false),
		Entry("present, absent (CCM's sentence: the ensure value is the version)", "present", "absent", "Would have installed version present", true),
		Entry("absent, absent", "absent", "absent", "", false),
		Entry("absent, installed", "absent", "1.0", "Would have uninstalled", true),
		Entry("latest, absent", "latest", "absent", "Would have installed latest", true),
		Entry("latest, installed", "latest", "1.0", "Would have upgraded to latest", true),
		Entry("<version>, same version", "2.0", "2.0", "", false),
		Entry("<version>, older version", "2.0", "1.0", "Would have upgraded to 2.0", true),
		Entry("<version>, newer version", "2.0", "3.0", "Would have downgraded to 2.0", true),
		Entry("<version>, absent", "2.0", "absent", "Would have installed version 2.0", true),
	)

	Describe("desired state validation", func() {
		DescribeTable("fails with ErrDesiredStateFailed when the action did not take",
			func(ctx context.Context, ensure, current string) {
				f := newFake(current)
				f.stuck = true
				out, err := apply(ctx, false, props("nginx", ensure), f)
				Expect(err).To(MatchError(resources.ErrDesiredStateFailed))
				Expect(err.Error()).To(ContainSubstring("package nginx"))
				Expect(ensureOf(out)).To(Equal(current))
				Expect(out.Changed).To(BeFalse())
			},
			Entry("present stays absent", "present", "absent"),
			Entry("absent stays installed", "absent", "1.0"),
			Entry("latest stays absent", "latest", "absent"),
			Entry("version stays absent", "2.0", "absent"),
			Entry("upgrade to a version does not move", "2.0", "1.0"),
			Entry("downgrade to a version does not move", "2.0", "3.0"),
		)

		It("accepts latest when the package is installed at all, as latest cannot be verified", func(ctx context.Context) {
			f := newFake("1.0")
			f.stuck = true
			out, err := apply(ctx, false, props("nginx", "latest"), f)
			Expect(err).NotTo(HaveOccurred())
			Expect(f.Mutations()).To(Equal([]string{"Upgrade nginx latest"}))
			Expect(ensureOf(out)).To(Equal("1.0"))
			Expect(out.Changed).To(BeFalse())
		})
	})

	Describe("failures", func() {
		It("returns the provider's error with the state found", func(ctx context.Context) {
			f := newFake("absent")
			f.actErr = errors.New("apt-get exited 100")
			out, err := apply(ctx, false, props("nginx", "present"), f)
			Expect(err).To(MatchError(f.actErr))
			Expect(err.Error()).To(Equal("package nginx: install: apt-get exited 100"))
			Expect(ensureOf(out)).To(Equal("absent"))
		})

		It("returns a status error without acting", func(ctx context.Context) {
			f := newFake("absent")
			f.statusErr = errors.New("dpkg-query missing")
			out, err := apply(ctx, false, props("nginx", "present"), f)
			Expect(err).To(MatchError(f.statusErr))
			Expect(out).To(BeNil())
			Expect(f.Mutations()).To(BeEmpty())
		})

		It("returns a version comparison error without acting", func(ctx context.Context) {
			f := newFake("1.0")
			f.cmpErr = errors.New("unparsable version")
			_, err := apply(ctx, false, props("nginx", "2.0"), f)
			Expect(err).To(MatchError(f.cmpErr))
			Expect(f.Mutations()).To(BeEmpty())
		})

		It("refuses a provider that is not a package provider", func(ctx context.Context) {
			_, err := apply(ctx, false, props("nginx", "present"), notPackageProvider{})
			Expect(err).To(MatchError(pkgtype.ErrNotPackageProvider))
		})

		It("refuses properties of another type", func(ctx context.Context) {
			_, err := pkgtype.Type{}.Apply(ctx, &resources.ApplyContext{}, &otherProps{}, newFake("absent"))
			Expect(err).To(MatchError(resources.ErrInvalid))
		})

		It("works without a logger or apply context", func(ctx context.Context) {
			f := newFake("absent")
			out, err := pkgtype.Type{}.Apply(ctx, nil, props("nginx", "present"), f)
			Expect(err).NotTo(HaveOccurred())
			Expect(ensureOf(out)).To(Equal("3.0"))
		})
	})
})

type otherProps struct{ resources.CommonProperties }

func (o *otherProps) Validate() error { return nil }
