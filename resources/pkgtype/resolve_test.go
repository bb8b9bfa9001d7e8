package pkgtype_test

import (
	"context"
	"errors"
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/resources/pkgtype"
)

// resolvingFake is a fakeProvider that also answers Resolve, with err.
type resolvingFake struct {
	*fakeProvider
	err      error
	resolved []string
}

var _ pkgtype.Resolver = (*resolvingFake)(nil)

func (r *resolvingFake) Resolve(_ context.Context, pkg, version string) error {
	r.resolved = append(r.resolved, pkg+" "+version)
	return r.err
}

var _ = Describe("Type under noop with a provider that resolves", func() {
	It("fails a noop install of a package the package manager does not have, saying so and changing nothing", func(ctx SpecContext) {
		prov := &resolvingFake{fakeProvider: newFake("absent"), err: fmt.Errorf("%w nosuchpkg-xyz: apt knows no package of that name", pkgtype.ErrNoSuchPackage)}
		out, err := apply(ctx, true, props("nosuchpkg-xyz", "present"), prov)
		Expect(err).To(MatchError(pkgtype.ErrNoSuchPackage))
		Expect(err).To(MatchError("package nosuchpkg-xyz: cannot install: no such package nosuchpkg-xyz: apt knows no package of that name"))
		Expect(ensureOf(out)).To(Equal("absent"))
		Expect(prov.Mutations()).To(BeEmpty())
		Expect(prov.resolved).To(Equal([]string{"nosuchpkg-xyz present"}))
	})

	It("predicts the install as before when the package resolves", func(ctx SpecContext) {
		prov := &resolvingFake{fakeProvider: newFake("absent")}
		out, err := apply(ctx, true, props("nginx", "present"), prov)
		Expect(err).NotTo(HaveOccurred())
		Expect(out.NoopMessage).To(Equal("Would have installed version present"))
		Expect(prov.Mutations()).To(BeEmpty())
	})

	It("does not ask about a package it would remove", func(ctx SpecContext) {
		prov := &resolvingFake{fakeProvider: newFake("1.0"), err: errors.New("must not be asked")}
		_, err := apply(ctx, true, props("nginx", "absent"), prov)
		Expect(err).NotTo(HaveOccurred())
		Expect(prov.resolved).To(BeEmpty())
	})
})
