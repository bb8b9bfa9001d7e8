package dnf_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/providers/apt/apttest"
)

// The real specs install packages into this host's rpm database (on
// Debian it is ~/.rpmdb) from a local repository they build. Every name
// below is one only these specs use.
const (
	// helloPkg is built at 1.0-1 and 2.0-1.
	helloPkg = "ccmtest-hello"
	// epochPkg is built at 2:1.0-1 and 3:0.5-1: the newer has the lower
	// version and the higher epoch.
	epochPkg = "ccmtest-epoch"
	// unknownPkg is in no repository.
	unknownPkg = "ccmtest-nosuch"
	// repoID names the repository in dnf's configuration and cache.
	repoID   = "ccm-fleet-dnf-test"
	repoFile = "/etc/yum.repos.d/" + repoID + ".repo"
	// cleanupTimeout bounds the cleanup after a spec, whose own context
	// is usually over by then.
	cleanupTimeout = time.Minute
)

// builtRPM is one package the local repository holds.
type builtRPM struct{ name, epoch, version, release string }

// EVR is the version as rpm's %{EVR} prints it: the epoch only when set.
func (b builtRPM) EVR() string {
	if b.epoch == "" {
		return b.version + "-" + b.release
	}
	return b.epoch + ":" + b.version + "-" + b.release
}

func builtRPMs() []builtRPM {
	return []builtRPM{
		{helloPkg, "", "1.0", "1"},
		{helloPkg, "", "2.0", "1"},
		{epochPkg, "2", "1.0", "1"},
		{epochPkg, "3", "0.5", "1"},
	}
}

// testSpec builds every test package: one data file holding its EVR.
const testSpec = `Name: %{ccm_name}
Version: %{ccm_version}
Release: %{ccm_release}
%{?ccm_epoch:Epoch: %{ccm_epoch}}
Summary: CCM Fleet dnf provider test package
License: Apache-2.0
BuildArch: noarch

%description
A package the CCM Fleet dnf provider's specs install and remove.

%install
mkdir -p %{buildroot}/usr/share/%{name}
echo '%{ccm_evr}' > %{buildroot}/usr/share/%{name}/VERSION

%files
/usr/share/%{name}
`

// realTools are the commands the real specs and the provider run.
func realTools() []string { return []string{"rpm", "rpmbuild", "createrepo_c", "dnf"} }

// requireRealHost fails the spec, saying what to do, unless this host can
// run the real specs: root, with rpm, rpmbuild, createrepo_c and dnf.
// It never skips: a host without them is one make deps has not set up.
func requireRealHost() {
	GinkgoHelper()
	var missing []string
	for _, tool := range realTools() {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	Expect(missing).To(BeEmpty(), "the real dnf specs need %s: run make deps (as root) to install them", strings.Join(missing, ", "))
	Expect(os.Geteuid()).To(Equal(0), "the real dnf specs install packages and need root")
}

// sh runs a command for setup, cleanup or checks and returns its combined
// output, wrapping a failure with the output's tail.
func sh(ctx context.Context, name string, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		tail := out
		if len(tail) > 2048 {
			tail = tail[len(tail)-2048:]
		}
		return string(out), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, tail)
	}
	return string(out), nil
}

// installedTestPackages lists the test packages rpm has installed, as
// NAME EVR.
func installedTestPackages(ctx context.Context) []string {
	GinkgoHelper()
	var found []string
	for _, name := range []string{helloPkg, epochPkg, unknownPkg} {
		out, err := exec.CommandContext(ctx, "rpm", "-q", name, "--queryformat", "%{NAME} %{EVR}\n").Output()
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() == 1 {
			continue // not installed
		}
		Expect(err).NotTo(HaveOccurred(), "rpm -q %s", name)
		found = append(found, strings.Fields(strings.TrimSpace(string(out)))...)
	}
	return found
}

// rpmEVR is the EVR rpm reports installed for name, or "absent" when it
// is not.
func rpmEVR(ctx context.Context, name string) string {
	GinkgoHelper()
	out, err := exec.CommandContext(ctx, "rpm", "-q", name, "--queryformat", "%{EVR}").Output()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 1 {
		return "absent"
	}
	Expect(err).NotTo(HaveOccurred(), "rpm -q %s", name)
	return string(out)
}

// localRepo builds every test package into a new local repository and
// registers it with dnf, under the machine-wide lock on package state that
// the apt and packaging specs take too. It cleans up before (after a
// killed run) and, through DeferCleanup, after: the test packages are
// erased, the repository file, dnf's cache of it and /etc/yum.repos.d (when
// the spec made it) are removed, and the spec fails if any test package is
// left installed.
func localRepo(ctx context.Context) string {
	GinkgoHelper()
	requireRealHost()
	release, err := apttest.LockHost(ctx)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(release)

	_, err = os.Stat(filepath.Dir(repoFile))
	madeReposDir := errors.Is(err, os.ErrNotExist)
	DeferCleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		cleanUpHost(cctx)
		if madeReposDir {
			Expect(os.Remove(filepath.Dir(repoFile))).To(Succeed())
		}
		Expect(installedTestPackages(cctx)).To(BeEmpty(), "test packages left installed after cleanup")
		Expect(repoFile).NotTo(BeAnExistingFile())
	})
	cleanUpHost(ctx)

	dir := GinkgoT().TempDir()
	Expect(os.Chmod(dir, 0o755)).To(Succeed())
	repo := filepath.Join(dir, "repo")
	Expect(os.Mkdir(repo, 0o755)).To(Succeed())
	spec := filepath.Join(dir, "test.spec")
	Expect(os.WriteFile(spec, []byte(testSpec), 0o644)).To(Succeed())
	for _, b := range builtRPMs() {
		args := []string{"-bb", "--quiet",
			"--define", "_topdir " + filepath.Join(dir, "build"),
			"--define", "_rpmdir " + repo,
			"--define", "ccm_name " + b.name,
			"--define", "ccm_version " + b.version,
			"--define", "ccm_release " + b.release,
			"--define", "ccm_evr " + b.EVR(),
		}
		if b.epoch != "" {
			args = append(args, "--define", "ccm_epoch "+b.epoch)
		}
		_, err := sh(ctx, "rpmbuild", append(args, spec)...)
		Expect(err).NotTo(HaveOccurred())
	}
	_, err = sh(ctx, "createrepo_c", "--quiet", repo)
	Expect(err).NotTo(HaveOccurred())

	Expect(os.MkdirAll(filepath.Dir(repoFile), 0o755)).To(Succeed())
	Expect(os.WriteFile(repoFile, []byte(fmt.Sprintf(
		"[%s]\nname=CCM Fleet dnf provider specs\nbaseurl=file://%s\nenabled=1\ngpgcheck=0\nmetadata_expire=0\n",
		repoID, repo)), 0o644)).To(Succeed())
	return repo
}

// cleanUpHost erases the test packages and removes the repository file
// and dnf's cache of it. Failures are logged; the caller judges the
// result.
func cleanUpHost(ctx context.Context) {
	for _, name := range []string{helloPkg, epochPkg, unknownPkg} {
		if rpmEVR(ctx, name) == "absent" {
			continue
		}
		if out, err := sh(ctx, "rpm", "-e", name); err != nil {
			GinkgoWriter.Printf("cleanup: %v\n", err)
		} else {
			GinkgoWriter.Printf("cleanup: rpm -e %s: %s\n", name, out)
		}
	}
	if err := os.Remove(repoFile); err != nil && !errors.Is(err, os.ErrNotExist) {
		GinkgoWriter.Printf("cleanup: %v\n", err)
	}
	cache, _ := filepath.Glob("/var/cache/dnf/" + repoID + "*")
	for _, p := range cache {
		if err := os.RemoveAll(p); err != nil {
			GinkgoWriter.Printf("cleanup: %v\n", err)
		}
	}
}
