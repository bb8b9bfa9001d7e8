package apt_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/providers/runner"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/pkgtype"
)

var _ = Describe("exact package names", func() {
	var (
		fake *runner.Fake
		prov = newProvider
	)
	BeforeEach(func() { fake = &runner.Fake{} })

	DescribeTable("installs nothing when no package has exactly the name, whatever apt would read it as",
		func(ctx context.Context, name, ensure, policyFile string) {
			expect(fake, policyArgv(name), 0, policyFile, "", "LC_ALL=C")
			err := prov(fake).Install(ctx, name, ensure)
			Expect(err).To(MatchError(pkgtype.ErrNoSuchPackage))
			Expect(err).To(MatchError(ContainSubstring("no such package " + name)))
			Expect(fake.Verify()).To(Succeed(), "no apt-get ran")
		},
		Entry("a regex with Pattern-Only (real apt 2.6 prints nothing)", "nginx-.", "present", "apt_cache_policy_pattern_only_nginx_dot.txt"),
		Entry("a regex, an apt that answers for every match", "nginx-.", "present", "apt_cache_policy_regex_nginx.txt"),
		Entry("a regex, latest", "nginx-.", "latest", "apt_cache_policy_regex_nginx.txt"),
		Entry("a regex, a version", "nginx-.", "1.22.1-9+deb12u7", "apt_cache_policy_regex_nginx.txt"),
		Entry("another package's stanza", "zsh-static", "present", "apt_cache_policy_not_installed.txt"),
	)

	It("names every package apt answered for when they are not the one asked for", func(ctx context.Context) {
		expect(fake, policyArgv("nginx-."), 0, "apt_cache_policy_regex_nginx.txt", "", "LC_ALL=C")
		err := prov(fake).Install(ctx, "nginx-.", "present")
		Expect(err).To(MatchError(ContainSubstring("apt-cache policy answered for libnginx-mod-http-image-filter")))
	})

	It("takes an architecture-qualified name that apt shows without its native architecture", func(ctx context.Context) {
		expect(fake, policyArgv("libc6:amd64"), 0, "apt_cache_policy_arch_qualified.txt", "", "LC_ALL=C")
		expect(fake, installArgv("--", "libc6:amd64=2.36-9+deb12u14"), 0, "apt_get_install.txt", "")
		Expect(prov(fake).Install(ctx, "libc6:amd64", "latest")).To(Succeed())
		Expect(fake.Verify()).To(Succeed())
	})

	It("refuses dpkg-query's answer for another package than the one asked for", func(ctx context.Context) {
		expect(fake, statusArgv("dpk."), 0, "dpkg_query_installed.txt", "")
		_, err := prov(fake).Status(ctx, "dpk.")
		Expect(err).To(MatchError(pkgtype.ErrUnexpectedOutput))
		Expect(err).To(MatchError(ContainSubstring(`answered for package "dpkg" when asked for dpk.`)))
	})

	It("fails the resource with no such package through the package type", func(ctx context.Context) {
		expect(fake, statusArgv("nginx-."), 1, "", "dpkg_query_unknown_stderr.txt")
		expect(fake, policyArgv("nginx-."), 0, "apt_cache_policy_pattern_only_nginx_dot.txt", "", "LC_ALL=C")
		p := &pkgtype.Properties{}
		p.Name, p.Ensure = "nginx-.", "present"
		Expect(p.Validate()).To(Succeed(), "a valid name: package names may hold dots")
		_, err := pkgtype.Type{}.Apply(ctx, &resources.ApplyContext{}, p, prov(fake))
		Expect(err).To(MatchError(pkgtype.ErrNoSuchPackage))
		Expect(err).To(MatchError(ContainSubstring("no such package nginx-.")))
		Expect(fake.Verify()).To(Succeed())
	})
})
