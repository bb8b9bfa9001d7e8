package apt_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/providers/apt"
	"github.com/ccm-fleet/ccm/providers/runner"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/pkgtype"
)

var aptEnv = []string{
	"DEBIAN_FRONTEND=noninteractive",
	"APT_LISTBUGS_FRONTEND=none",
	"APT_LISTCHANGES_FRONTEND=none",
}

const statusFormat = "-f=${Package} ${Version} ${Architecture} ${db:Status-Status}"

func statusArgv(pkg string) []string {
	return []string{"dpkg-query", "-W", statusFormat, "--", pkg}
}

func policyArgv(pkg string) []string {
	return []string{"apt-cache", "-o", "APT::Cmd::Pattern-Only=true", "policy", "--", pkg}
}

func installArgv(operands ...string) []string {
	return append([]string{"apt-get", "-o", "DPkg::Lock::Timeout=120", "install", "-y", "-q", "--no-remove", "-o", "APT::Cmd::Pattern-Only=true", "-o", "DPkg::Options::=--force-confold"}, operands...)
}

func removeArgv(pkg string) []string {
	return []string{"apt-get", "-o", "DPkg::Lock::Timeout=120", "-q", "-y", "-o", "APT::Cmd::Pattern-Only=true", "remove", "--", pkg}
}

// expectResolved scripts the apt-cache policy call that finds the test
// package by its exact name.
func expectResolved(f *runner.Fake) {
	expect(f, policyArgv("ccm-fleet-testpkg"), 0, "apt_cache_policy_installed.txt", "", "LC_ALL=C")
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

// expect scripts one command with the apt environment (plus extra);
// apt-get runs in the C locale, since its messages about locks are read.
func expect(f *runner.Fake, argv []string, exit int, stdout, stderr string, extraEnv ...string) {
	if argv[0] == "apt-get" {
		extraEnv = append(extraEnv, "LC_ALL=C")
	}
	f.Add(runner.Expectation{
		Argv:   argv,
		Env:    append(append([]string(nil), aptEnv...), extraEnv...),
		Result: runner.Result{ExitCode: exit, Stdout: fixture(stdout), Stderr: fixture(stderr)},
	})
}

func newProvider(f runner.Runner) *apt.Provider {
	p, err := apt.NewFactory(f, nil, &sync.Mutex{}).New()
	Expect(err).NotTo(HaveOccurred())
	// No holder of the host's dpkg lock shows in specs with a fake runner.
	apt.SetLockPaths(p.(*apt.Provider), []string{filepath.Join(GinkgoT().TempDir(), "no-lock")})
	return p.(*apt.Provider)
}

var _ = Describe("Provider", func() {
	var (
		fake *runner.Fake
		prov *apt.Provider
	)

	BeforeEach(func() {
		fake = &runner.Fake{}
		prov = newProvider(fake)
	})

	It("is named apt", func() {
		Expect(prov.Name()).To(Equal("apt"))
	})

	Describe("Status", func() {
		DescribeTable("treats only dpkg's installed status as present",
			func(ctx context.Context, pkg, stdoutFile string, exit int, stderrFile, wantEnsure, wantStatus string) {
				expect(fake, statusArgv(pkg), exit, stdoutFile, stderrFile)
				st, err := prov.Status(ctx, pkg)
				Expect(err).NotTo(HaveOccurred())
				Expect(fake.Verify()).To(Succeed())
				Expect(st.Ensure).To(Equal(wantEnsure))
				Expect(st.Protocol).To(Equal("io.choria.ccm.v1.resource.package.state"))
				Expect(st.Type).To(Equal("package"))
				Expect(st.Name).To(Equal(pkg))
				Expect(st.Metadata.Provider).To(Equal("apt"))
				Expect(st.Metadata.Extended).To(HaveKeyWithValue("status", wantStatus))
				// An absent package's version is "absent", as CCM reports it.
				Expect(st.Metadata.Version).To(Equal(wantEnsure))
			},
			Entry("installed: present", "dpkg", "dpkg_query_installed.txt", 0, "", "1.21.22", "installed"),
			Entry("installed with an epoch: present", "diffutils", "dpkg_query_installed_epoch.txt", 0, "", "1:3.8-4", "installed"),
			Entry("config-files (removed, config files remain): absent", "apache2", "dpkg_query_config_files.txt", 0, "", "absent", "config-files"),
			Entry("half-installed (installation started but failed): absent", "nginx-common", "dpkg_query_half_installed.txt", 0, "", "absent", "half-installed"),
			Entry("half-configured (configuration failed): absent", "postgresql-15", "dpkg_query_half_configured.txt", 0, "", "absent", "half-configured"),
			Entry("unpacked (not configured): absent", "openssh-server", "dpkg_query_unpacked.txt", 0, "", "absent", "unpacked"),
			Entry("not-installed: absent", "zsh", "dpkg_query_not_installed.txt", 0, "", "absent", "not-installed"),
			Entry("unknown to dpkg (exit 1): absent", "pkg", "", 1, "dpkg_query_unknown_stderr.txt", "absent", "unknown"),
		)

		It("reports name, version and architecture of an installed package", func(ctx context.Context) {
			expect(fake, statusArgv("dpkg"), 0, "dpkg_query_installed.txt", "")
			st, err := prov.Status(ctx, "dpkg")
			Expect(err).NotTo(HaveOccurred())
			Expect(*st.Metadata).To(Equal(protocol.PackageMetadata{
				Name: "dpkg", Version: "1.21.22", Arch: "amd64", Provider: "apt",
				Extended: map[string]any{"status": "installed"},
			}))
		})

		It("refuses output it cannot parse, such as two architectures at once", func(ctx context.Context) {
			expect(fake, statusArgv("libc6"), 0, "dpkg_query_multiarch.txt", "")
			_, err := prov.Status(ctx, "libc6")
			Expect(err).To(MatchError(pkgtype.ErrUnexpectedOutput))
			Expect(err).To(MatchError(ContainSubstring("libc6:amd64")))
		})

		It("returns the runner's error when dpkg-query cannot run", func(ctx context.Context) {
			fake.Add(runner.Expectation{Argv: statusArgv("zsh"), Err: runner.ErrNotFound})
			_, err := prov.Status(ctx, "zsh")
			Expect(err).To(MatchError(runner.ErrNotFound))
		})
	})

	Describe("Install", func() {
		It("installs present without a version once apt-cache knows the exact name", func(ctx context.Context) {
			expectResolved(fake)
			expect(fake, installArgv("--", "ccm-fleet-testpkg"), 0, "apt_get_install.txt", "")
			Expect(prov.Install(ctx, "ccm-fleet-testpkg", "present")).To(Succeed())
			Expect(fake.Verify()).To(Succeed())
		})

		DescribeTable("installs latest at the candidate apt-cache policy reports, without --allow-downgrades",
			func(ctx context.Context, pkg, policyFile, candidate string) {
				expect(fake, policyArgv(pkg), 0, policyFile, "", "LC_ALL=C")
				expect(fake, installArgv("--", pkg+"="+candidate), 0, "apt_get_install.txt", "")
				Expect(prov.Install(ctx, pkg, "latest")).To(Succeed())
				Expect(fake.Verify()).To(Succeed())
			},
			Entry("installed, newer candidate", "dpkg", "apt_cache_policy_upgradable.txt", "1.21.23"),
			Entry("installed, candidate is installed", "ccm-fleet-testpkg", "apt_cache_policy_installed.txt", "2.0-1"),
			Entry("not installed", "zsh", "apt_cache_policy_not_installed.txt", "5.9-4+b15"),
		)

		DescribeTable("fails present and latest without a candidate and installs nothing",
			func(ctx context.Context, pkg, ensure, policyFile string, want error) {
				expect(fake, policyArgv(pkg), 0, policyFile, "", "LC_ALL=C")
				err := prov.Install(ctx, pkg, ensure)
				Expect(err).To(MatchError(want))
				Expect(err).To(MatchError(ContainSubstring(pkg)))
				Expect(fake.Verify()).To(Succeed())
			},
			Entry("Candidate: (none), latest", "mail-transport-agent", "latest", "apt_cache_policy_none.txt", apt.ErrNoCandidate),
			Entry("Candidate: (none), present (a virtual package: apt would pick a provider of another name)", "mail-transport-agent", "present", "apt_cache_policy_none.txt", apt.ErrNoCandidate),
			Entry("unknown package, no output", "nosuch-ccm", "latest", "apt_cache_policy_unknown.txt", pkgtype.ErrNoSuchPackage),
		)

		It("installs a specific version with --allow-downgrades", func(ctx context.Context) {
			expectResolved(fake)
			expect(fake, installArgv("--allow-downgrades", "--", "ccm-fleet-testpkg=1.0-1"), 0, "apt_get_install_downgrade.txt", "")
			Expect(prov.Install(ctx, "ccm-fleet-testpkg", "1.0-1")).To(Succeed())
			Expect(fake.Verify()).To(Succeed())
		})

		DescribeTable("reports apt-get's failure with its message",
			func(ctx context.Context, version string, argv []string, stdoutFile, stderrFile, want string) {
				expectResolved(fake)
				expect(fake, argv, 100, stdoutFile, stderrFile)
				err := prov.Install(ctx, "ccm-fleet-testpkg", version)
				Expect(err).To(MatchError(pkgtype.ErrCommandFailed))
				Expect(err).To(MatchError(ContainSubstring("exited with status 100")))
				Expect(err).To(MatchError(ContainSubstring(want)))
				Expect(fake.Verify()).To(Succeed())
			},
			Entry("the package gone between the lookup and apt-get", "present", installArgv("--", "ccm-fleet-testpkg"),
				"apt_get_install_unknown_stdout.txt", "apt_get_install_unknown_stderr.txt", "E: Unable to locate package nosuch-ccm"),
			Entry("dpkg lock held", "present", installArgv("--", "ccm-fleet-testpkg"),
				"", "apt_get_lock_held_stderr.txt", "Could not get lock /var/lib/dpkg/lock-frontend"),
		)
	})

	Describe("Upgrade and Downgrade", func() {
		It("upgrade delegates to install", func(ctx context.Context) {
			expectResolved(fake)
			expect(fake, installArgv("--allow-downgrades", "--", "ccm-fleet-testpkg=2.0-1"), 0, "apt_get_install.txt", "")
			expect(fake, policyArgv("dpkg"), 0, "apt_cache_policy_upgradable.txt", "", "LC_ALL=C")
			expect(fake, installArgv("--", "dpkg=1.21.23"), 0, "apt_get_install.txt", "")
			Expect(prov.Upgrade(ctx, "ccm-fleet-testpkg", "2.0-1")).To(Succeed())
			Expect(prov.Upgrade(ctx, "dpkg", "latest")).To(Succeed())
			Expect(fake.Verify()).To(Succeed())
		})

		It("downgrade delegates to install, which allows downgrades", func(ctx context.Context) {
			expectResolved(fake)
			expect(fake, installArgv("--allow-downgrades", "--", "ccm-fleet-testpkg=1.0-1"), 0, "apt_get_install_downgrade.txt", "")
			Expect(prov.Downgrade(ctx, "ccm-fleet-testpkg", "1.0-1")).To(Succeed())
			Expect(fake.Verify()).To(Succeed())
		})
	})

	Describe("Uninstall", func() {
		It("removes, keeping configuration files", func(ctx context.Context) {
			expect(fake, statusArgv("ccm-fleet-testpkg"), 0, "dpkg_query_testpkg_2.0-1.txt", "")
			expect(fake, removeArgv("ccm-fleet-testpkg"), 0, "apt_get_remove.txt", "")
			Expect(prov.Uninstall(ctx, "ccm-fleet-testpkg")).To(Succeed())
			Expect(fake.Verify()).To(Succeed())
		})

		It("reports apt-get's failure", func(ctx context.Context) {
			expect(fake, statusArgv("ccm-fleet-testpkg"), 0, "dpkg_query_testpkg_2.0-1.txt", "")
			expect(fake, removeArgv("ccm-fleet-testpkg"), 100, "", "apt_get_lock_held_stderr.txt")
			err := prov.Uninstall(ctx, "ccm-fleet-testpkg")
			Expect(err).To(MatchError(pkgtype.ErrCommandFailed))
			Expect(err).To(MatchError(ContainSubstring("apt-get -o DPkg::Lock::Timeout=120 -q -y -o APT::Cmd::Pattern-Only=true remove -- ccm-fleet-testpkg exited with status 100")))
		})

		It("removes nothing when dpkg has no package of exactly that name installed", func(ctx context.Context) {
			expect(fake, statusArgv("nginx-."), 1, "", "dpkg_query_unknown_stderr.txt")
			err := prov.Uninstall(ctx, "nginx-.")
			Expect(err).To(MatchError(pkgtype.ErrNoSuchPackage))
			Expect(err).To(MatchError(ContainSubstring("no such package nginx-.")))
			Expect(fake.Verify()).To(Succeed())
		})
	})

	It("compares versions the Debian way", func() {
		c, err := prov.VersionCmp("1.0~rc1", "1.0", false)
		Expect(err).NotTo(HaveOccurred())
		Expect(c).To(Equal(-1))
		_, err = prov.VersionCmp("1.0", "x:1", false)
		Expect(err).To(MatchError(apt.ErrInvalidVersion))
	})

	Describe("through the package type", func() {
		apply := func(ctx context.Context, noop bool, ensure string) (*resources.Outcome, error) {
			p := &pkgtype.Properties{}
			p.Name, p.Ensure = "ccm-fleet-testpkg", ensure
			return pkgtype.Type{}.Apply(ctx, &resources.ApplyContext{Noop: noop}, p, prov)
		}

		It("downgrades to a version with exact commands", func(ctx context.Context) {
			expect(fake, statusArgv("ccm-fleet-testpkg"), 0, "dpkg_query_testpkg_2.0-1.txt", "")
			expectResolved(fake)
			expect(fake, installArgv("--allow-downgrades", "--", "ccm-fleet-testpkg=1.0-1"), 0, "apt_get_install_downgrade.txt", "")
			expect(fake, statusArgv("ccm-fleet-testpkg"), 0, "dpkg_query_testpkg_1.0-1.txt", "")
			out, err := apply(ctx, false, "1.0-1")
			Expect(err).NotTo(HaveOccurred())
			Expect(fake.Verify()).To(Succeed())
			Expect(out.Changed).To(BeTrue())
			Expect(out.State.Common().Ensure).To(Equal("1.0-1"))
		})

		It("under noop only reads the state and what apt could install", func(ctx context.Context) {
			expect(fake, statusArgv("ccm-fleet-testpkg"), 0, "dpkg_query_testpkg_1.0-1.txt", "")
			expectResolved(fake)
			out, err := apply(ctx, true, "2.0-1")
			Expect(err).NotTo(HaveOccurred())
			Expect(fake.Verify()).To(Succeed())
			Expect(out.NoopMessage).To(Equal("Would have upgraded to 2.0-1"))
		})

		It("under noop fails a package apt does not have, saying so, and runs no apt-get", func(ctx context.Context) {
			expect(fake, statusArgv("ccm-fleet-testpkg"), 1, "", "dpkg_query_unknown_stderr.txt")
			expect(fake, policyArgv("ccm-fleet-testpkg"), 0, "apt_cache_policy_unknown.txt", "", "LC_ALL=C")
			_, err := apply(ctx, true, "present")
			Expect(err).To(MatchError(pkgtype.ErrNoSuchPackage))
			Expect(err).To(MatchError("package ccm-fleet-testpkg: cannot install: no such package ccm-fleet-testpkg: apt knows no package of that name"))
			Expect(fake.Verify()).To(Succeed())
		})

		It("reinstalls a package left with only its config files", func(ctx context.Context) {
			expect(fake, statusArgv("ccm-fleet-testpkg"), 0, "dpkg_query_testpkg_config_files.txt", "")
			expectResolved(fake)
			expect(fake, installArgv("--", "ccm-fleet-testpkg"), 0, "apt_get_install.txt", "")
			expect(fake, statusArgv("ccm-fleet-testpkg"), 0, "dpkg_query_testpkg_2.0-1.txt", "")
			out, err := apply(ctx, false, "present")
			Expect(err).NotTo(HaveOccurred())
			Expect(fake.Verify()).To(Succeed())
			Expect(out.State.Common().Ensure).To(Equal("2.0-1"))
		})
	})

	Describe("injection", func() {
		badNames := []any{
			Entry("an option", "-oAPT::Get::AllowUnauthenticated=true"),
			Entry("a long option", "--reinstall"),
			Entry("a command after a semicolon", ";rm -rf /"),
			Entry("command substitution", "$(x)"),
			Entry("backticks", "`id`"),
			Entry("a NUL byte", "nginx\x00"),
			Entry("257 bytes", strings.Repeat("a", 257)),
			Entry("a unicode hyphen look-alike", "nginx\u2010"),
			Entry("a space", "nginx vim"),
			Entry("a path", "/tmp/evil.deb"),
			Entry("a version pin", "nginx=1.0"),
			Entry("an apt pattern", "~nnginx"),
			Entry("a leading dot", ".nginx"),
			Entry("a leading plus", "+nginx"),
		}

		refusesName := func(ctx context.Context, name string) {
			Expect(prov.Status(ctx, name)).Error().To(MatchError(resources.ErrInvalid))
			for _, v := range []string{"present", "latest", "1.0-1"} {
				Expect(prov.Install(ctx, name, v)).To(MatchError(resources.ErrInvalid))
				Expect(prov.Upgrade(ctx, name, v)).To(MatchError(resources.ErrInvalid))
				Expect(prov.Downgrade(ctx, name, v)).To(MatchError(resources.ErrInvalid))
			}
			Expect(prov.Uninstall(ctx, name)).To(MatchError(resources.ErrInvalid))

			p := &pkgtype.Properties{}
			p.Name, p.Ensure = name, "present"
			Expect(p.Validate()).To(MatchError(resources.ErrInvalid))
			_, err := pkgtype.Type{}.Apply(ctx, &resources.ApplyContext{}, p, prov)
			Expect(err).To(MatchError(resources.ErrInvalid))

			Expect(fake.Calls()).To(BeEmpty())
		}
		DescribeTable("refuses a bad package name before any command runs", append([]any{refusesName}, badNames...)...)

		DescribeTable("refuses a bad version before any command runs",
			func(ctx context.Context, version string) {
				Expect(prov.Install(ctx, "nginx", version)).To(MatchError(resources.ErrInvalid))
				Expect(prov.Upgrade(ctx, "nginx", version)).To(MatchError(resources.ErrInvalid))
				Expect(prov.Downgrade(ctx, "nginx", version)).To(MatchError(resources.ErrInvalid))
				Expect(fake.Calls()).To(BeEmpty())
			},
			Entry("an option", "-1.0"),
			Entry("a semicolon", "1.0;reboot"),
			Entry("a space", "1.0 --allow-unauthenticated"),
			Entry("absent is not a version", "absent"),
			Entry("a unicode look-alike", "1.0\u2010"),
		)
	})
})

var _ = Describe("Provider with a version apt does not list", func() {
	It("refuses it before apt-get runs, naming what apt lists, in Resolve (noop) and Install alike", func(ctx context.Context) {
		fake := &runner.Fake{}
		prov := newProvider(fake)
		expectResolved(fake)
		Expect(prov.Resolve(ctx, "ccm-fleet-testpkg", "9.9-1")).To(MatchError(apt.ErrNoSuchVersion))
		expectResolved(fake)
		err := prov.Install(ctx, "ccm-fleet-testpkg", "9.9-1")
		Expect(err).To(MatchError(apt.ErrNoSuchVersion))
		Expect(err).To(MatchError(ContainSubstring("apt lists no version 9.9-1 of ccm-fleet-testpkg; it lists")))
		Expect(fake.Verify()).To(Succeed(), "only apt-cache policy ran")
		for _, v := range []string{"present", "latest"} {
			expectResolved(fake)
			Expect(prov.Resolve(ctx, "ccm-fleet-testpkg", v)).To(Succeed(), v)
		}
	})
})
