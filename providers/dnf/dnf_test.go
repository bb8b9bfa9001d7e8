package dnf_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/providers/dnf"
	"github.com/ccm-fleet/ccm/providers/runner"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/pkgtype"
)

const queryFormat = "%{NAME} %|EPOCH?{%{EPOCH}}:{0}| %{VERSION} %{RELEASE} %{ARCH}"

func rpmArgv(pkg string) []string { return []string{"rpm", "-q", pkg, "--queryformat", queryFormat} }

// repoqueryArgv asks dnf which packages operand means, by name.
func repoqueryArgv(operand string) []string {
	return []string{"dnf", "repoquery", "--quiet", "--queryformat", "%{name}\n", operand}
}

// resolves scripts the repoquery of operand resolving to zsh and, for a
// version without an epoch, the repoquery of its epochs: 0.
func resolves(f *runner.Fake, operand string) {
	expect(f, repoqueryArgv(operand), 0, "dnf_repoquery_zsh.txt", "")
	if strings.HasPrefix(operand, "zsh-") && !strings.Contains(operand, ":") {
		expect(f, []string{"dnf", "repoquery", "--quiet", "--queryformat", "%{epoch}\n", operand}, 0, "dnf_repoquery_epoch_0.txt", "")
	}
}

// before scripts what a command needs first: the repoquery of its operand
// (resolving to zsh), or rpm -q of the package it removes.
func before(f *runner.Fake, argv []string) {
	if argv[1] == "remove" {
		expect(f, rpmArgv(argv[len(argv)-1]), 0, "rpm_q_installed.txt", "")
		return
	}
	resolves(f, argv[len(argv)-1])
}

// fixture reads a testdata file; "" reads as nothing.
func fixture(name string) []byte {
	if name == "" {
		return nil
	}
	b, err := os.ReadFile(filepath.Join("testdata", name))
	Expect(err).NotTo(HaveOccurred())
	return b
}

func expect(f *runner.Fake, argv []string, exit int, stdout, stderr string) {
	f.Add(runner.Expectation{
		Argv:   argv,
		Result: runner.Result{ExitCode: exit, Stdout: fixture(stdout), Stderr: fixture(stderr)},
	})
}

var _ = Describe("Provider", func() {
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

	It("is named dnf", func() {
		Expect(prov.Name()).To(Equal("dnf"))
	})

	Describe("Status", func() {
		It("reports an installed package at VERSION-RELEASE with epoch and release in extended", func(ctx context.Context) {
			expect(fake, rpmArgv("zsh"), 0, "rpm_q_installed.txt", "")
			st, err := prov.Status(ctx, "zsh")
			Expect(err).NotTo(HaveOccurred())
			Expect(fake.Verify()).To(Succeed())
			Expect(st.Ensure).To(Equal("5.8-9.el9"))
			Expect(st.Protocol).To(Equal("io.choria.ccm.v1.resource.package.state"))
			Expect(*st.Metadata).To(Equal(protocol.PackageMetadata{
				Name: "zsh", Version: "5.8-9.el9", Arch: "x86_64", Provider: "dnf",
				Extended: map[string]any{"epoch": "0", "release": "9.el9"},
			}))
		})

		// With the epoch left out, ensure 1:3.0.7-27.el9 never matched
		// (found by the real dnf, real_test.go).
		It("reports a non-zero epoch before the version, as rpm's EVR does, and in extended", func(ctx context.Context) {
			expect(fake, rpmArgv("openssl"), 0, "rpm_q_installed_epoch.txt", "")
			st, err := prov.Status(ctx, "openssl")
			Expect(err).NotTo(HaveOccurred())
			Expect(st.Ensure).To(Equal("1:3.0.7-27.el9"))
			Expect(st.Metadata.Version).To(Equal("1:3.0.7-27.el9"))
			Expect(st.Metadata.Extended).To(Equal(map[string]any{"epoch": "1", "release": "27.el9"}))
		})

		It("reports absent when rpm says the package is not installed", func(ctx context.Context) {
			expect(fake, rpmArgv("nosuch"), 1, "rpm_q_absent.txt", "")
			st, err := prov.Status(ctx, "nosuch")
			Expect(err).NotTo(HaveOccurred())
			Expect(fake.Verify()).To(Succeed())
			Expect(st.Ensure).To(Equal("absent"))
			Expect(st.Metadata.Version).To(Equal("absent"), "as CCM reports it")
			Expect(st.Metadata.Provider).To(Equal("dnf"))
		})

		It("refuses output it cannot parse, such as two installed versions", func(ctx context.Context) {
			expect(fake, rpmArgv("kernel"), 0, "rpm_q_two_versions.txt", "")
			_, err := prov.Status(ctx, "kernel")
			Expect(err).To(MatchError(pkgtype.ErrUnexpectedOutput))
		})

		It("returns the runner's error when rpm cannot run", func(ctx context.Context) {
			fake.Add(runner.Expectation{Argv: rpmArgv("zsh"), Err: runner.ErrNotFound})
			_, err := prov.Status(ctx, "zsh")
			Expect(err).To(MatchError(runner.ErrNotFound))
		})
	})

	DescribeTable("runs dnf install, downgrade or remove with -y, a version joined to the name by a hyphen",
		func(ctx context.Context, call func(context.Context, *dnf.Provider) error, argv []string, stdout string) {
			before(fake, argv)
			expect(fake, argv, 0, stdout, "")
			Expect(call(ctx, prov)).To(Succeed())
			Expect(fake.Verify()).To(Succeed())
		},
		Entry("install present", func(ctx context.Context, p *dnf.Provider) error { return p.Install(ctx, "zsh", "present") },
			[]string{"dnf", "install", "-y", "zsh"}, "dnf_install_zsh.txt"),
		Entry("install latest", func(ctx context.Context, p *dnf.Provider) error { return p.Install(ctx, "zsh", "latest") },
			[]string{"dnf", "install", "-y", "zsh"}, "dnf_install_zsh.txt"),
		Entry("install a version", func(ctx context.Context, p *dnf.Provider) error { return p.Install(ctx, "zsh", "5.8-9.el9") },
			[]string{"dnf", "install", "-y", "zsh-5.8-9.el9"}, "dnf_install_zsh.txt"),
		// dnf install leaves an installed package as it is: latest needs
		// dnf upgrade (found by the real dnf, real_test.go).
		Entry("upgrade to latest uses dnf upgrade", func(ctx context.Context, p *dnf.Provider) error { return p.Upgrade(ctx, "zsh", "latest") },
			[]string{"dnf", "upgrade", "-y", "zsh"}, "dnf_install_zsh.txt"),
		Entry("upgrade for present uses dnf upgrade", func(ctx context.Context, p *dnf.Provider) error { return p.Upgrade(ctx, "zsh", "present") },
			[]string{"dnf", "upgrade", "-y", "zsh"}, "dnf_install_zsh.txt"),
		Entry("upgrade to a version installs exactly that version", func(ctx context.Context, p *dnf.Provider) error { return p.Upgrade(ctx, "zsh", "5.8-9.el9") },
			[]string{"dnf", "install", "-y", "zsh-5.8-9.el9"}, "dnf_install_zsh.txt"),
		Entry("downgrade uses dnf downgrade", func(ctx context.Context, p *dnf.Provider) error { return p.Downgrade(ctx, "zsh", "5.8-7.el9") },
			[]string{"dnf", "downgrade", "-y", "zsh-5.8-7.el9"}, "dnf_downgrade_zsh.txt"),
		Entry("uninstall uses dnf remove", func(ctx context.Context, p *dnf.Provider) error { return p.Uninstall(ctx, "zsh") },
			[]string{"dnf", "remove", "-y", "zsh"}, "dnf_remove_zsh.txt"),
	)

	DescribeTable("reports dnf's failure with its message",
		func(ctx context.Context, call func(context.Context, *dnf.Provider) error, argv []string, stdout, stderr, want string) {
			before(fake, argv)
			expect(fake, argv, 1, stdout, stderr)
			err := call(ctx, prov)
			Expect(err).To(MatchError(pkgtype.ErrCommandFailed))
			Expect(err).To(MatchError(ContainSubstring(strings.Join(argv, " ") + " exited with status 1")))
			Expect(err).To(MatchError(ContainSubstring(want)))
			Expect(fake.Verify()).To(Succeed())
		},
		Entry("install of a package gone between the lookup and the install", func(ctx context.Context, p *dnf.Provider) error { return p.Install(ctx, "zsh", "present") },
			[]string{"dnf", "install", "-y", "zsh"}, "dnf_install_nosuch_stdout.txt", "dnf_install_nosuch_stderr.txt", "Error: Unable to find a match: nosuch"),
		Entry("downgrade below the lowest version", func(ctx context.Context, p *dnf.Provider) error { return p.Downgrade(ctx, "zsh", "5.8-1.el9") },
			[]string{"dnf", "downgrade", "-y", "zsh-5.8-1.el9"}, "dnf_downgrade_lowest_stdout.txt", "dnf_downgrade_lowest_stderr.txt", "Error: No packages marked for downgrade."),
		Entry("remove that dnf refuses", func(ctx context.Context, p *dnf.Provider) error { return p.Uninstall(ctx, "zsh") },
			[]string{"dnf", "remove", "-y", "zsh"}, "dnf_remove_nosuch_stdout.txt", "dnf_remove_nosuch_stderr.txt", "Error: No packages marked for removal."),
	)

	It("refuses to downgrade without a specific version", func(ctx context.Context) {
		Expect(prov.Downgrade(ctx, "zsh", "latest")).To(MatchError(resources.ErrInvalid))
		Expect(prov.Downgrade(ctx, "zsh", "")).To(MatchError(resources.ErrInvalid))
		Expect(fake.Calls()).To(BeEmpty())
	})

	It("compares versions as rpm does and never fails", func() {
		c, err := prov.VersionCmp("1.0.0", "1.0", true)
		Expect(err).NotTo(HaveOccurred())
		Expect(c).To(Equal(0))
		c, err = prov.VersionCmp("5.8-9.el9", "5.8-10.el9", false)
		Expect(err).NotTo(HaveOccurred())
		Expect(c).To(Equal(-1))
		c, err = prov.VersionCmp("1.0~rc1", "1.0", false)
		Expect(err).NotTo(HaveOccurred())
		Expect(c).To(Equal(-1))
	})

	Describe("through the package type", func() {
		apply := func(ctx context.Context, noop bool, ensure string) (*resources.Outcome, error) {
			p := &pkgtype.Properties{}
			p.Name, p.Ensure = "zsh", ensure
			return pkgtype.Type{}.Apply(ctx, &resources.ApplyContext{Noop: noop}, p, prov)
		}

		It("installs an absent package", func(ctx context.Context) {
			expect(fake, rpmArgv("zsh"), 1, "rpm_q_absent.txt", "")
			resolves(fake, "zsh-5.8-9.el9")
			expect(fake, []string{"dnf", "install", "-y", "zsh-5.8-9.el9"}, 0, "dnf_install_zsh.txt", "")
			expect(fake, rpmArgv("zsh"), 0, "rpm_q_installed.txt", "")
			out, err := apply(ctx, false, "5.8-9.el9")
			Expect(err).NotTo(HaveOccurred())
			Expect(fake.Verify()).To(Succeed())
			Expect(out.Changed).To(BeTrue())
			Expect(out.State.Common().Ensure).To(Equal("5.8-9.el9"))
		})

		It("downgrades to an older release", func(ctx context.Context) {
			expect(fake, rpmArgv("zsh"), 0, "rpm_q_installed.txt", "")
			resolves(fake, "zsh-5.8-7.el9")
			expect(fake, []string{"dnf", "downgrade", "-y", "zsh-5.8-7.el9"}, 0, "dnf_downgrade_zsh.txt", "")
			fake.Add(runner.Expectation{Argv: rpmArgv("zsh"), Result: runner.Result{Stdout: []byte("zsh 0 5.8 7.el9 x86_64")}})
			out, err := apply(ctx, false, "5.8-7.el9")
			Expect(err).NotTo(HaveOccurred())
			Expect(fake.Verify()).To(Succeed())
			Expect(out.State.Common().Ensure).To(Equal("5.8-7.el9"))
		})

		It("fails the desired state when dnf installs another version than asked", func(ctx context.Context) {
			expect(fake, rpmArgv("zsh"), 1, "rpm_q_absent.txt", "")
			resolves(fake, "zsh-5.8")
			expect(fake, []string{"dnf", "install", "-y", "zsh-5.8"}, 0, "dnf_install_zsh.txt", "")
			expect(fake, rpmArgv("zsh"), 0, "rpm_q_installed.txt", "")
			_, err := apply(ctx, false, "5.8")
			Expect(err).To(MatchError(resources.ErrDesiredStateFailed))
			Expect(fake.Verify()).To(Succeed())
		})

		It("under noop only reads the state", func(ctx context.Context) {
			expect(fake, rpmArgv("zsh"), 0, "rpm_q_installed.txt", "")
			out, err := apply(ctx, true, "absent")
			Expect(err).NotTo(HaveOccurred())
			Expect(fake.Verify()).To(Succeed())
			Expect(out.NoopMessage).To(Equal("Would have uninstalled"))
			Expect(out.Changed).To(BeTrue())
		})
	})

	Describe("injection", func() {
		refusesName := func(ctx context.Context, name string) {
			Expect(prov.Status(ctx, name)).Error().To(MatchError(resources.ErrInvalid))
			for _, v := range []string{"present", "latest", "1.0-1.el9"} {
				Expect(prov.Install(ctx, name, v)).To(MatchError(resources.ErrInvalid))
				Expect(prov.Upgrade(ctx, name, v)).To(MatchError(resources.ErrInvalid))
			}
			Expect(prov.Downgrade(ctx, name, "1.0-1.el9")).To(MatchError(resources.ErrInvalid))
			Expect(prov.Uninstall(ctx, name)).To(MatchError(resources.ErrInvalid))

			p := &pkgtype.Properties{}
			p.Name, p.Ensure = name, "present"
			Expect(p.Validate()).To(MatchError(resources.ErrInvalid))
			_, err := pkgtype.Type{}.Apply(ctx, &resources.ApplyContext{}, p, prov)
			Expect(err).To(MatchError(resources.ErrInvalid))

			Expect(fake.Calls()).To(BeEmpty())
		}
		DescribeTable("refuses a bad package name before any command runs", refusesName,
			Entry("an option", "--setopt=gpgcheck=0"),
			Entry("a short option", "-x"),
			Entry("a command after a semicolon", ";rm -rf /"),
			Entry("command substitution", "$(x)"),
			Entry("backticks", "`id`"),
			Entry("a NUL byte", "zsh\x00"),
			Entry("257 bytes", strings.Repeat("a", 257)),
			Entry("a unicode hyphen look-alike", "nginx\u2010"),
			Entry("a space", "zsh bash"),
			Entry("a local rpm path", "/tmp/evil.rpm"),
			Entry("a URL", "http://example.invalid/x.rpm"),
			Entry("a glob", "zsh*"),
		)

		DescribeTable("refuses a bad version before any command runs",
			func(ctx context.Context, version string) {
				Expect(prov.Install(ctx, "zsh", version)).To(MatchError(resources.ErrInvalid))
				Expect(prov.Upgrade(ctx, "zsh", version)).To(MatchError(resources.ErrInvalid))
				Expect(prov.Downgrade(ctx, "zsh", version)).To(MatchError(resources.ErrInvalid))
				Expect(fake.Calls()).To(BeEmpty())
			},
			Entry("an option", "-1.0"),
			Entry("a semicolon", "1.0;reboot"),
			Entry("a space", "1.0 --nogpgcheck"),
			Entry("absent is not a version", "absent"),
			Entry("a unicode look-alike", "1.0\u2010"),
		)
	})
})
