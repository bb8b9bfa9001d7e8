package dnf_test

import (
	"context"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/providers/dnf"
	"github.com/ccm-fleet/ccm/providers/runner"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/pkgtype"
)

// The repoquery fixtures are dnf's "%{name}\n" query format as documented
// (one name per line); dnf is not installed where these tests were
// written, so they are not captured output.
var _ = Describe("exact package names", func() {
	var (
		fake *runner.Fake
		prov *dnf.Provider
	)
	BeforeEach(func() {
		fake = &runner.Fake{}
		p, err := dnf.NewFactory(fake, nil, &sync.Mutex{}).New()
		Expect(err).NotTo(HaveOccurred())
		prov = p.(*dnf.Provider)
	})

	DescribeTable("installs nothing unless the name means packages of exactly that name",
		func(ctx context.Context, name, ensure, operand, repoquery, want string) {
			expect(fake, repoqueryArgv(operand), 0, repoquery, "")
			err := prov.Install(ctx, name, ensure)
			Expect(err).To(MatchError(pkgtype.ErrNoSuchPackage))
			Expect(err).To(MatchError(ContainSubstring("no such package " + name + ": " + want)))
			Expect(fake.Verify()).To(Succeed(), "no dnf install ran")
		},
		Entry("name-version read as another package at a version", "nginx-1.20.1", "present", "nginx-1.20.1", "dnf_repoquery_nginx_version.txt",
			"dnf reads nginx-1.20.1 as nginx, not as a package of exactly that name"),
		Entry("nothing of that name", "nginx-.", "latest", "nginx-.", "dnf_repoquery_none.txt", "dnf knows no package of that name"),
		Entry("two packages at once", "foo-1", "present", "foo-1", "dnf_repoquery_two_names.txt", "dnf reads foo-1 as foo, foo-1"),
		Entry("a version making the operand another package's", "foo", "1", "foo-1", "dnf_repoquery_two_names.txt", "dnf reads foo-1 as foo, foo-1"),
		Entry("a version no repository has", "zsh", "9.9-1", "zsh-9.9-1", "dnf_repoquery_none.txt", "dnf knows no package of that name at version 9.9-1"),
	)

	It("reports a name rpm -q reads as another package at a version absent, and removes nothing", func(ctx context.Context) {
		expect(fake, rpmArgv("zsh-5.8"), 0, "rpm_q_installed.txt", "")
		st, err := prov.Status(ctx, "zsh-5.8")
		Expect(err).NotTo(HaveOccurred())
		Expect(st.Ensure).To(Equal(pkgtype.EnsureAbsent))

		expect(fake, rpmArgv("zsh-5.8"), 0, "rpm_q_installed.txt", "")
		err = prov.Uninstall(ctx, "zsh-5.8")
		Expect(err).To(MatchError(pkgtype.ErrNoSuchPackage))
		Expect(fake.Verify()).To(Succeed(), "no dnf remove ran")
	})

	It("fails the resource with no such package through the package type", func(ctx context.Context) {
		expect(fake, rpmArgv("nginx-1.20.1"), 0, "rpm_q_installed.txt", "")
		expect(fake, repoqueryArgv("nginx-1.20.1"), 0, "dnf_repoquery_nginx_version.txt", "")
		p := &pkgtype.Properties{}
		p.Name, p.Ensure = "nginx-1.20.1", "present"
		_, err := pkgtype.Type{}.Apply(ctx, &resources.ApplyContext{}, p, prov)
		Expect(err).To(MatchError(pkgtype.ErrNoSuchPackage))
		Expect(fake.Verify()).To(Succeed())
	})
})
