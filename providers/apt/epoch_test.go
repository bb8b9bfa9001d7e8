package apt_test

import (
	"log/slog"
	"os/exec"
	"strings"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/providers/apt"
	"github.com/ccm-fleet/ccm/providers/runner"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/pkgtype"
)

// A version written without its epoch is epoch 0 to dpkg and apt: it is
// not the installed 1:2.3-1 when ensure says 2.3-1. These specs ask the
// real tools about a package installed on this machine with an epoch and
// hold the provider to their verdict; they change nothing (apt-get only
// simulates, and the apply is a noop).
var _ = Describe("a version without its epoch", Label("real"), func() {
	It("does not match an installed package with an epoch, as dpkg and apt-get say", func(ctx SpecContext) {
		// Any installed package whose version has an epoch will do
		// (Debian's diffutils, 1:3.8-4 on bookworm, for one).
		out, err := exec.CommandContext(ctx, "dpkg-query", "-W", "-f=${db:Status-Status} ${Package} ${Version}\n").Output()
		Expect(err).NotTo(HaveOccurred())
		var name, installed string
		for _, line := range strings.Split(string(out), "\n") {
			if f := strings.Fields(line); len(f) == 3 && f[0] == "installed" && strings.Contains(f[2], ":") {
				name, installed = f[1], f[2]
				break
			}
		}
		Expect(name).NotTo(BeEmpty(), "no installed package on this machine has an epoch")
		_, bare, _ := strings.Cut(installed, ":")

		// dpkg: the bare version is older (epoch 0).
		Expect(exec.CommandContext(ctx, "dpkg", "--compare-versions", bare, "lt", installed).Run()).To(Succeed())
		Expect(apt.CompareVersions(bare, installed)).To(Equal(-1))
		Expect(apt.CompareVersions(installed, bare)).To(Equal(1))
		Expect(apt.CompareVersions("0:"+bare, bare)).To(Equal(0))

		// apt-get: pkg=bare names no version it knows; pkg=installed is the
		// installed one.
		sim, err := exec.CommandContext(ctx, "apt-get", "-s", "-q", "install", name+"="+bare).CombinedOutput()
		Expect(err).To(HaveOccurred(), "%s", sim)
		Expect(string(sim)).To(ContainSubstring("Version '" + bare + "' for '" + name + "' was not found"))
		sim, err = exec.CommandContext(ctx, "apt-get", "-s", "-q", "install", name+"="+installed).CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "%s", sim)
		Expect(string(sim)).To(ContainSubstring(name + " is already the newest version (" + installed + ")"))

		// So the package type finds ensure: bare not met, and, as apt-get
		// would refuse it, a noop says so instead of promising a change,
		// naming the version with its epoch; ensure: installed is stable.
		log := slog.New(slog.NewTextHandler(GinkgoWriter, nil))
		prov, err := apt.NewFactory(runner.Exec{}, log, &sync.Mutex{}).New()
		Expect(err).NotTo(HaveOccurred())
		noop := func(ensure string) (*resources.Outcome, error) {
			GinkgoHelper()
			p := &pkgtype.Properties{}
			p.Name, p.Ensure = name, ensure
			Expect(p.Validate()).To(Succeed())
			return pkgtype.Type{}.Apply(ctx, &resources.ApplyContext{Noop: true, Log: log}, p, prov)
		}
		_, err = noop(bare)
		Expect(err).To(MatchError(apt.ErrNoSuchVersion))
		Expect(err).To(MatchError(ContainSubstring("apt lists no version " + bare + " of " + name + " (did you mean " + installed + "? a version without its epoch is epoch 0)")))
		stable, err := noop(installed)
		Expect(err).NotTo(HaveOccurred())
		Expect(stable.Changed).To(BeFalse())
		Expect(stable.State.Common().Ensure).To(Equal(installed))
	})
})
