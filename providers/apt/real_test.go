package apt_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/providers/apt"
	"github.com/ccm-fleet/ccm/providers/runner"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/pkgtype"
)

const (
	testPkg       = "ccm-fleet-testpkg"
	testConffile  = "/etc/ccm-fleet-testpkg.conf"
	testList      = "/etc/apt/sources.list.d/ccm-fleet-test.list"
	testRepoGlob  = "ccm-fleet-testrepo-*"
	testListsGlob = "/var/lib/apt/lists/_tmp_ccm-fleet-testrepo-*"
)

// skipUnlessRealApt skips, saying why, where packages cannot be installed.
func skipUnlessRealApt() {
	if os.Geteuid() != 0 {
		Skip("installing packages needs root; this test runs as uid " + fmt.Sprint(os.Geteuid()))
	}
	for _, tool := range []string{"dpkg-deb", "dpkg", "dpkg-query", "apt-get", "apt-cache"} {
		if _, err := exec.LookPath(tool); err != nil {
			Skip(tool + " is not installed, so no package can be built or installed here")
		}
	}
}

// sh runs a command for the test's own setup and checks, returning its
// combined output.
func sh(ctx context.Context, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), apt.Env()...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// buildDeb builds testPkg at version into dir, installing one data file and
// one conffile, and returns the .deb's file name.
func buildDeb(ctx context.Context, dir, version string) string {
	root := filepath.Join(dir, "build-"+version)
	for path, content := range map[string]string{
		"DEBIAN/control": fmt.Sprintf("Package: %s\nVersion: %s\nArchitecture: all\n"+
			"Maintainer: CCM Fleet Tests <tests@ccm-fleet.invalid>\n"+
			"Description: test package for the CCM Fleet apt provider\n", testPkg, version),
		"DEBIAN/conffiles":                    testConffile + "\n",
		"etc/ccm-fleet-testpkg.conf":          "setting = 1\n",
		"usr/share/ccm-fleet-testpkg/VERSION": version + "\n",
	} {
		p := filepath.Join(root, path)
		Expect(os.MkdirAll(filepath.Dir(p), 0o755)).To(Succeed())
		Expect(os.WriteFile(p, []byte(content), 0o644)).To(Succeed())
	}
	deb := fmt.Sprintf("%s_%s_all.deb", testPkg, version)
	_, err := sh(ctx, "dpkg-deb", "--root-owner-group", "-Zgzip", "--build", root, filepath.Join(dir, deb))
	Expect(err).NotTo(HaveOccurred())
	Expect(os.RemoveAll(root)).To(Succeed())
	return deb
}

// writeRepo writes a flat repository's Packages index and a Release file
// listing it, so apt fetches exactly that.
func writeRepo(dir string, debs ...string) {
	var idx strings.Builder
	for _, deb := range debs {
		b, err := os.ReadFile(filepath.Join(dir, deb))
		Expect(err).NotTo(HaveOccurred())
		sum := sha256.Sum256(b)
		version := strings.TrimSuffix(strings.TrimPrefix(deb, testPkg+"_"), "_all.deb")
		fmt.Fprintf(&idx, "Package: %s\nVersion: %s\nArchitecture: all\n"+
			"Maintainer: CCM Fleet Tests <tests@ccm-fleet.invalid>\nFilename: ./%s\nSize: %d\nSHA256: %s\n"+
			"Description: test package for the CCM Fleet apt provider\n\n",
			testPkg, version, deb, len(b), hex.EncodeToString(sum[:]))
	}
	packages := []byte(idx.String())
	Expect(os.WriteFile(filepath.Join(dir, "Packages"), packages, 0o644)).To(Succeed())
	sum := sha256.Sum256(packages)
	release := fmt.Sprintf("Origin: ccm-fleet-test\nLabel: ccm-fleet-test\nDate: %s\nSHA256:\n %s %d Packages\n",
		time.Now().UTC().Format(time.RFC1123Z), hex.EncodeToString(sum[:]), len(packages))
	Expect(os.WriteFile(filepath.Join(dir, "Release"), []byte(release), 0o644)).To(Succeed())
}

// cleanUpHost removes every trace of the test from the host: the package
// (with its conffile), the sources file, its package lists and the
// repository directories. It runs before the test too, in case an earlier
// run was killed.
func cleanUpHost(ctx context.Context) {
	if out, err := sh(ctx, "dpkg", "--purge", testPkg); err != nil {
		fmt.Fprintf(GinkgoWriter, "cleanup: %v\n", err)
	} else {
		fmt.Fprint(GinkgoWriter, out)
	}
	if err := os.Remove(testList); err != nil && !os.IsNotExist(err) {
		fmt.Fprintf(GinkgoWriter, "cleanup: %v\n", err)
	}
	lists, _ := filepath.Glob(testListsGlob)
	repos, _ := filepath.Glob(filepath.Join(os.TempDir(), testRepoGlob))
	for _, p := range append(lists, repos...) {
		if err := os.RemoveAll(p); err != nil {
			fmt.Fprintf(GinkgoWriter, "cleanup: %v\n", err)
		}
	}
}

// dpkgState is what dpkg itself says: "<version> <status>", or "unknown"
// when dpkg has no record of the package.
// hostLock takes a machine-wide exclusive lock for this test and returns
// its release.
func hostLock() func() {
	f, err := os.OpenFile(filepath.Join(os.TempDir(), "ccm-fleet-apt-test.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	Expect(err).NotTo(HaveOccurred())
	Expect(syscall.Flock(int(f.Fd()), syscall.LOCK_EX)).To(Succeed())
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		_ = f.Close()
	}
}

func dpkgState(ctx context.Context) string {
	out, err := exec.CommandContext(ctx, "dpkg-query", "-W", "-f=${Version} ${db:Status-Status}", "--", testPkg).Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}

var _ = Describe("Provider on this host", Label("real"), func() {
	It("installs, downgrades, upgrades and removes a package it built", func(sctx SpecContext) {
		skipUnlessRealApt()
		ctx, cancel := context.WithTimeout(sctx, 3*time.Minute)
		defer cancel()

		// The test changes the host's package state: one run at a time per
		// machine, even across checkouts.
		unlock := hostLock()
		DeferCleanup(unlock)

		cleanUpHost(ctx)
		DeferCleanup(func() {
			cctx, ccancel := context.WithTimeout(context.Background(), time.Minute)
			defer ccancel()
			cleanUpHost(cctx)
			Expect(dpkgState(cctx)).To(Equal("unknown"))
			Expect(testList).NotTo(BeAnExistingFile())
		})

		By("building version 1.0-1 and 2.0-1 into a local repository")
		repo, err := os.MkdirTemp("", testRepoGlob)
		Expect(err).NotTo(HaveOccurred())
		Expect(os.Chmod(repo, 0o755)).To(Succeed()) // apt reads as _apt
		writeRepo(repo, buildDeb(ctx, repo, "1.0-1"), buildDeb(ctx, repo, "2.0-1"))
		Expect(os.WriteFile(testList, []byte("deb [trusted=yes] file:"+repo+" ./\n"), 0o644)).To(Succeed())
		_, err = sh(ctx, "apt-get", "update", "-q",
			"-o", "Dir::Etc::sourcelist=sources.list.d/ccm-fleet-test.list",
			"-o", "Dir::Etc::sourceparts=-", "-o", "APT::Get::List-Cleanup=0")
		Expect(err).NotTo(HaveOccurred())

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
		Expect(os.ReadFile("/usr/share/ccm-fleet-testpkg/VERSION")).To(Equal([]byte("1.0-1\n")))

		By("ensure 2.0-1 upgrades")
		out = apply("2.0-1", false)
		Expect(out.Changed).To(BeTrue())
		Expect(dpkgState(ctx)).To(Equal("2.0-1 installed"))

		By("ensure latest at the latest version runs the upgrade and changes nothing")
		out = apply("latest", false)
		Expect(out.Changed).To(BeFalse())
		Expect(dpkgState(ctx)).To(Equal("2.0-1 installed"))

		By("ensure of a version no repository has fails with apt-get's message and changes nothing")
		bad := &pkgtype.Properties{}
		bad.Name, bad.Ensure = testPkg, "9.9-1"
		Expect(bad.Validate()).To(Succeed())
		_, err = pkgtype.Type{}.Apply(ctx, &resources.ApplyContext{Log: log}, bad, prov)
		Expect(err).To(MatchError(pkgtype.ErrCommandFailed))
		Expect(err).To(MatchError(ContainSubstring("E: Version '9.9-1' for 'ccm-fleet-testpkg' was not found")))
		Expect(dpkgState(ctx)).To(Equal("2.0-1 installed"))

		By("ensure absent removes it, keeping the conffile, and config-files counts as absent")
		out = apply("absent", false)
		Expect(out.Changed).To(BeTrue())
		Expect(out.State.Common().Ensure).To(Equal("absent"))
		Expect(dpkgState(ctx)).To(Equal("2.0-1 config-files"))
		Expect(testConffile).To(BeAnExistingFile())
		st, err := prov.(pkgtype.Provider).Status(ctx, testPkg)
		Expect(err).NotTo(HaveOccurred())
		Expect(st.Ensure).To(Equal("absent"))
		Expect(st.Metadata.Extended).To(HaveKeyWithValue("status", "config-files"))
	}, NodeTimeout(4*time.Minute))
})
