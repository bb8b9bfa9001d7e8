package dnf_test

import (
	"context"
	"log/slog"
	"os"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/providers/dnf"
	"github.com/ccm-fleet/ccm/providers/runner"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/pkgtype"
)

var _ = Describe("Provider on this host", Label("real"), func() {
	var (
		ctx  context.Context
		log  *slog.Logger
		prov *dnf.Provider
	)

	BeforeEach(func() {
		// A bound, not a speed check: a dnf call took 0.3 to 0.6 s here.
		// (A SpecContext ends with the BeforeEach; the specs need one
		// that lasts until the It is done.)
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.Background(), 4*time.Minute)
		DeferCleanup(cancel)
		localRepo(ctx)
		log = slog.New(slog.NewTextHandler(GinkgoWriter, &slog.HandlerOptions{Level: slog.LevelDebug}))
		p, err := dnf.NewFactory(runner.Exec{}, log, &sync.Mutex{}).New()
		Expect(err).NotTo(HaveOccurred())
		prov = p.(*dnf.Provider)
	})

	apply := func(name, ensure string, noop bool) (*resources.Outcome, error) {
		GinkgoHelper()
		p := &pkgtype.Properties{}
		p.Name, p.Ensure = name, ensure
		Expect(p.Validate()).To(Succeed())
		return pkgtype.Type{}.Apply(ctx, &resources.ApplyContext{Noop: noop, Log: log}, p, prov)
	}
	// converge applies ensure, expects it to change the package to want,
	// then applies it again and expects no change.
	converge := func(name, ensure, want string) {
		GinkgoHelper()
		out, err := apply(name, ensure, false)
		Expect(err).NotTo(HaveOccurred())
		Expect(out.Changed).To(BeTrue())
		Expect(out.State.Common().Ensure).To(Equal(want))
		Expect(rpmEVR(ctx, name)).To(Equal(want))

		out, err = apply(name, ensure, false)
		Expect(err).NotTo(HaveOccurred())
		Expect(out.Changed).To(BeFalse(), "a second run of ensure %s changes nothing", ensure)
		Expect(rpmEVR(ctx, name)).To(Equal(want))
	}
	// wouldChange applies ensure under noop and expects its message and
	// the package left as it was.
	wouldChange := func(name, ensure, message string) {
		GinkgoHelper()
		before := rpmEVR(ctx, name)
		out, err := apply(name, ensure, true)
		Expect(err).NotTo(HaveOccurred())
		Expect(out.Changed).To(BeTrue())
		Expect(out.NoopMessage).To(Equal(message))
		Expect(rpmEVR(ctx, name)).To(Equal(before), "noop changed nothing")
	}

	It("installs the newest version for present, and a second run changes nothing", func() {
		wouldChange(helloPkg, "present", "Would have installed version present")
		converge(helloPkg, "present", "2.0-1")
		Expect(os.ReadFile("/usr/share/" + helloPkg + "/VERSION")).To(Equal([]byte("2.0-1\n")))
	})

	It("installs a pinned older version", func() {
		wouldChange(helloPkg, "1.0-1", "Would have installed version 1.0-1")
		converge(helloPkg, "1.0-1", "1.0-1")
		Expect(os.ReadFile("/usr/share/" + helloPkg + "/VERSION")).To(Equal([]byte("1.0-1\n")))
	})

	It("upgrades an installed older version to latest", func() {
		converge(helloPkg, "1.0-1", "1.0-1")
		wouldChange(helloPkg, "latest", "Would have upgraded to latest")
		out, err := apply(helloPkg, "latest", false)
		Expect(err).NotTo(HaveOccurred())
		Expect(out.Changed).To(BeTrue())
		Expect(out.State.Common().Ensure).To(Equal("2.0-1"))
		Expect(rpmEVR(ctx, helloPkg)).To(Equal("2.0-1"))

		By("ensure latest at the newest version runs the upgrade and changes nothing")
		out, err = apply(helloPkg, "latest", false)
		Expect(err).NotTo(HaveOccurred())
		Expect(out.Changed).To(BeFalse())
		Expect(rpmEVR(ctx, helloPkg)).To(Equal("2.0-1"))
	})

	It("upgrades to a pinned newer version and downgrades to a pinned older one", func() {
		converge(helloPkg, "1.0-1", "1.0-1")
		wouldChange(helloPkg, "2.0-1", "Would have upgraded to 2.0-1")
		converge(helloPkg, "2.0-1", "2.0-1")
		wouldChange(helloPkg, "1.0-1", "Would have downgraded to 1.0-1")
		converge(helloPkg, "1.0-1", "1.0-1")
		Expect(os.ReadFile("/usr/share/" + helloPkg + "/VERSION")).To(Equal([]byte("1.0-1\n")))
	})

	It("removes an installed package, and a second run changes nothing", func() {
		converge(helloPkg, "present", "2.0-1")
		wouldChange(helloPkg, "absent", "Would have uninstalled")
		converge(helloPkg, "absent", "absent")
		Expect("/usr/share/" + helloPkg).NotTo(BeAnExistingFile())
	})

	It("reports a package at its epoch, upgrades across epochs and pins one", func() {
		wouldChange(epochPkg, "2:1.0-1", "Would have installed version 2:1.0-1")
		converge(epochPkg, "2:1.0-1", "2:1.0-1")
		st, err := prov.Status(ctx, epochPkg)
		Expect(err).NotTo(HaveOccurred())
		Expect(st.Metadata.Extended).To(HaveKeyWithValue("epoch", "2"))

		By("latest is the higher epoch, though its version is lower")
		out, err := apply(epochPkg, "latest", false)
		Expect(err).NotTo(HaveOccurred())
		Expect(out.Changed).To(BeTrue())
		Expect(rpmEVR(ctx, epochPkg)).To(Equal("3:0.5-1"))

		By("pinning the lower epoch downgrades")
		wouldChange(epochPkg, "2:1.0-1", "Would have downgraded to 2:1.0-1")
		converge(epochPkg, "2:1.0-1", "2:1.0-1")
	})

	It("fails an unknown package with no such package, changing nothing", func() {
		converge(helloPkg, "1.0-1", "1.0-1")
		for _, noop := range []bool{true, false} {
			for _, ensure := range []string{"present", "latest", "1.0-1"} {
				_, err := apply(unknownPkg, ensure, noop)
				Expect(err).To(MatchError(pkgtype.ErrNoSuchPackage), "ensure %s, noop %v", ensure, noop)
				Expect(err).To(MatchError(ContainSubstring("no such package " + unknownPkg + ": dnf knows no package of that name")))
			}
		}
		Expect(installedTestPackages(ctx)).To(Equal([]string{helloPkg, "1.0-1"}))

		By("ensure absent of a package that is not installed is already in its desired state")
		out, err := apply(unknownPkg, "absent", false)
		Expect(err).NotTo(HaveOccurred())
		Expect(out.Changed).To(BeFalse())
	})

	It("fails a version no repository has, naming it, and changes nothing", func() {
		converge(helloPkg, "1.0-1", "1.0-1")
		for _, noop := range []bool{true, false} {
			_, err := apply(helloPkg, "9.9-1", noop)
			Expect(err).To(MatchError(pkgtype.ErrNoSuchPackage))
			Expect(err).To(MatchError(ContainSubstring("no such package " + helloPkg + ": dnf knows no package of that name at version 9.9-1")))
		}
		Expect(installedTestPackages(ctx)).To(Equal([]string{helloPkg, "1.0-1"}))
	})

	It("fails a version without the installed package's epoch, in a noop too, naming it with its epoch and changing nothing", func() {
		converge(epochPkg, "2:1.0-1", "2:1.0-1")
		// To rpm, 1.0-1 is 0:1.0-1, older than 2:1.0-1; dnf reads the
		// same operand as 1.0-1 at any epoch, which is installed, so a run
		// would leave it and a noop would promise a downgrade: refused.
		for _, noop := range []bool{true, false} {
			_, err := apply(epochPkg, "1.0-1", noop)
			Expect(err).To(MatchError(pkgtype.ErrNoSuchPackage), "noop %v", noop)
			Expect(err).To(MatchError(ContainSubstring("at version 1.0-1: the repositories have it only at epoch 2 (did you mean 2:1.0-1? a version without its epoch is epoch 0)")))
		}
		Expect(rpmEVR(ctx, epochPkg)).To(Equal("2:1.0-1"))
	})

	It("installs and removes only a package of exactly the name asked for", func() {
		converge(helloPkg, "1.0-1", "1.0-1")
		// dnf reads ccmtest-hello-2.0-1 as ccmtest-hello at 2.0-1, and
		// rpm -q ccmtest-hello-1.0-1 as the installed ccmtest-hello.
		for _, ensure := range []string{"present", "latest"} {
			_, err := apply(helloPkg+"-2.0-1", ensure, false)
			Expect(err).To(MatchError(pkgtype.ErrNoSuchPackage))
			Expect(err).To(MatchError(ContainSubstring("dnf reads " + helloPkg + "-2.0-1 as " + helloPkg + ", not as a package of exactly that name")))
		}
		st, err := prov.Status(ctx, helloPkg+"-1.0-1")
		Expect(err).NotTo(HaveOccurred())
		Expect(st.Ensure).To(Equal(pkgtype.EnsureAbsent))
		Expect(prov.Uninstall(ctx, helloPkg+"-1.0-1")).To(MatchError(pkgtype.ErrNoSuchPackage))
		Expect(installedTestPackages(ctx)).To(Equal([]string{helloPkg, "1.0-1"}))
	})

	It("under noop changes nothing whatever it is asked", func() {
		for _, ensure := range []string{"present", "latest", "1.0-1", "2.0-1"} {
			Expect(apply(helloPkg, ensure, true)).Error().NotTo(HaveOccurred())
		}
		converge(helloPkg, "1.0-1", "1.0-1")
		for _, ensure := range []string{"latest", "2.0-1", "absent"} {
			Expect(apply(helloPkg, ensure, true)).Error().NotTo(HaveOccurred())
		}
		Expect(installedTestPackages(ctx)).To(Equal([]string{helloPkg, "1.0-1"}))
	})
})
