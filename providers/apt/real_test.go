package apt_test

import (
	"context"
	"log/slog"
	"os"
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

var _ = Describe("Provider on this host", Label("real"), func() {
	It("installs, downgrades, upgrades and removes a package it built", func(sctx SpecContext) {
		// Never skipped: a machine that cannot run it fails the suite.
		if reason, ok := apttest.Available(); !ok {
			Fail(reason + " (make test runs the real package specs as root after make deps)")
		}
		// A bound, not a speed check: apt runs took 50 s each at load 30 on 2 cores.
		ctx, cancel := context.WithTimeout(sctx, 8*time.Minute)
		defer cancel()

		// Setup changes the host's package state under a machine-wide lock
		// (one run at a time per machine, even across checkouts), and its
		// cleanup purges the package, removes the source and checks that
		// dpkg has no record of the package left.
		By("building version 1.0-1 and 2.0-1 into a local repository")
		repo, err := apttest.Setup(ctx, GinkgoT())
		Expect(err).NotTo(HaveOccurred())
		Expect(repo.Versions()).To(Equal([]string{"1.0-1", "2.0-1"}))
		Expect(repo.SourceList()).To(BeAnExistingFile())
		testPkg := repo.PackageName()
		dpkgState := func(ctx context.Context) string {
			GinkgoHelper()
			st, err := repo.DpkgState(ctx)
			Expect(err).NotTo(HaveOccurred())
			return st
		}
		Expect(dpkgState(ctx)).To(Equal("unknown"))

		log := slog.New(slog.NewTextHandler(GinkgoWriter, &slog.HandlerOptions{Level: slog.LevelDebug}))
		prov, err := apt.NewFactory(runner.Exec{}, log, &sync.Mutex{}).New()
		Expect(err).NotTo(HaveOccurred())
		apply := func(ensure string, noop bool) *resources.Outcome {
			GinkgoHelper()
			p := &pkgtype.Properties{}
			p.Name, p.Ensure = testPkg, ensure
			Expect(p.Validate()).To(Succeed())
			out, err := pkgtype.Type{}.Apply(ctx, &resources.ApplyContext{Noop: noop, Log: log}, p, prov)
			Expect(err).NotTo(HaveOccurred())
			return out
		}

		By("ensure present installs the candidate, 2.0-1")
		out := apply("present", false)
		Expect(out.Changed).To(BeTrue())
		Expect(out.State.Common().Ensure).To(Equal("2.0-1"))
		Expect(dpkgState(ctx)).To(Equal("2.0-1 installed"))

		By("ensure present again changes nothing")
		out = apply("present", false)
		Expect(out.Changed).To(BeFalse())
		Expect(dpkgState(ctx)).To(Equal("2.0-1 installed"))

		By("noop ensure 1.0-1 only says it would downgrade")
		out = apply("1.0-1", true)
		Expect(out.Changed).To(BeTrue())
		Expect(out.NoopMessage).To(Equal("Would have downgraded to 1.0-1"))
		Expect(dpkgState(ctx)).To(Equal("2.0-1 installed"))

		By("ensure 1.0-1 downgrades")
		out = apply("1.0-1", false)
		Expect(out.Changed).To(BeTrue())
		Expect(out.State.Common().Ensure).To(Equal("1.0-1"))
		Expect(dpkgState(ctx)).To(Equal("1.0-1 installed"))
		Expect(os.ReadFile(repo.DataFile())).To(Equal([]byte("1.0-1\n")))

		By("ensure 2.0-1 upgrades")
		out = apply("2.0-1", false)
		Expect(out.Changed).To(BeTrue())
		Expect(dpkgState(ctx)).To(Equal("2.0-1 installed"))

		By("ensure latest at the latest version runs the upgrade and changes nothing")
		out = apply("latest", false)
		Expect(out.Changed).To(BeFalse())
		Expect(dpkgState(ctx)).To(Equal("2.0-1 installed"))

		By("ensure of a version no repository has fails naming the versions apt lists, in a noop too, and changes nothing")
		bad := &pkgtype.Properties{}
		bad.Name, bad.Ensure = testPkg, "9.9-1"
		Expect(bad.Validate()).To(Succeed())
		for _, noop := range []bool{true, false} {
			_, err = pkgtype.Type{}.Apply(ctx, &resources.ApplyContext{Log: log, Noop: noop}, bad, prov)
			Expect(err).To(MatchError(apt.ErrNoSuchVersion), "noop %v", noop)
			Expect(err).To(MatchError(ContainSubstring("apt lists no version 9.9-1 of ccm-fleet-testpkg; it lists 2.0-1, 1.0-1")))
			Expect(dpkgState(ctx)).To(Equal("2.0-1 installed"))
		}

		By("ensure absent removes it, keeping the conffile, and config-files counts as absent")
		out = apply("absent", false)
		Expect(out.Changed).To(BeTrue())
		Expect(out.State.Common().Ensure).To(Equal("absent"))
		Expect(dpkgState(ctx)).To(Equal("2.0-1 config-files"))
		Expect(repo.Conffile()).To(BeAnExistingFile())
		st, err := prov.(pkgtype.Provider).Status(ctx, testPkg)
		Expect(err).NotTo(HaveOccurred())
		Expect(st.Ensure).To(Equal("absent"))
		Expect(st.Metadata.Extended).To(HaveKeyWithValue("status", "config-files"))
	}, NodeTimeout(4*time.Minute))
})
