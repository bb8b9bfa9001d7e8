package apt_test

import (
	"context"
	"log/slog"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/providers/apt"
	"github.com/ccm-fleet/ccm/providers/apt/apttest"
	"github.com/ccm-fleet/ccm/providers/runner"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/pkgtype"
)

var _ = Describe("Exact package names on this host", Label("real"), func() {
	It("installs only a package of exactly the name asked for, never what apt would read the name as", func(sctx SpecContext) {
		// Never skipped: a machine that cannot run it fails the suite.
		if reason, ok := apttest.Available(); !ok {
			Fail(reason + " (make test runs the real package specs as root after make deps)")
		}
		// A bound, not a speed check: apt runs took 50 s each at load 30 on 2 cores.
		ctx, cancel := context.WithTimeout(sctx, 8*time.Minute)
		defer cancel()
		repo, err := apttest.Setup(ctx, GinkgoT())
		Expect(err).NotTo(HaveOccurred())
		Expect(repo.Neighbours()).To(ContainElements("ccm-fleet-testpkg-a", "ccm-fleet-testpkg-b", "zz-ccm-fleet-testpkg-x"))
		installed := func() []string {
			GinkgoHelper()
			names, err := repo.Installed(ctx)
			Expect(err).NotTo(HaveOccurred())
			return names
		}
		Expect(installed()).To(BeEmpty())

		log := slog.New(slog.NewTextHandler(GinkgoWriter, &slog.HandlerOptions{Level: slog.LevelDebug}))
		prov, err := apt.NewFactory(runner.Exec{}, log, &sync.Mutex{}).New()
		Expect(err).NotTo(HaveOccurred())
		apply := func(name, ensure string) (*resources.Outcome, error) {
			p := &pkgtype.Properties{}
			p.Name, p.Ensure = name, ensure
			Expect(p.Validate()).To(Succeed())
			return pkgtype.Type{}.Apply(ctx, &resources.ApplyContext{Log: log}, p, prov)
		}

		for _, ensure := range []string{"present", "latest", "1.0-1"} {
			By("a regex-looking name, ensure " + ensure)
			_, err = apply("ccm-fleet-testpkg-.", ensure)
			Expect(err).To(MatchError(pkgtype.ErrNoSuchPackage))
			Expect(err).To(MatchError(ContainSubstring("no such package ccm-fleet-testpkg-.")))
			Expect(installed()).To(BeEmpty(), "apt selected nothing by regex")
		}
		By("a name apt would read as 'remove ccm-fleet-testpkg-a'")
		_, err = apply("ccm-fleet-testpkg-a", "present")
		Expect(err).NotTo(HaveOccurred())
		Expect(installed()).To(Equal([]string{"ccm-fleet-testpkg-a"}), "the exact name installs that package alone")
		_, err = apply("ccm-fleet-testpkg-a-", "present")
		Expect(err).To(MatchError(pkgtype.ErrNoSuchPackage))
		Expect(installed()).To(Equal([]string{"ccm-fleet-testpkg-a"}), "nothing was removed")

		By("removing by exact name only")
		_, err = apply("ccm-fleet-testpkg-.", "absent")
		Expect(err).NotTo(HaveOccurred(), "nothing of that name is installed: nothing to do")
		Expect(installed()).To(Equal([]string{"ccm-fleet-testpkg-a"}))
		_, err = apply("ccm-fleet-testpkg-a", "absent")
		Expect(err).NotTo(HaveOccurred())
		Expect(installed()).To(BeEmpty())
	})
})
