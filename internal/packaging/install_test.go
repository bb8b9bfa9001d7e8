package packaging_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/internal/packaging"
	"github.com/ccm-fleet/ccm/providers/apt/apttest"
)

// The stamp the test builds with, checked in what the installed binaries print.
const (
	testVersion = "v9.8.7-test.1"
	testCommit  = "abc1234"
	testDate    = "2026-01-02T03:04:05Z"
)

// run runs a command and returns its combined output, failing the spec
// when it fails.
func run(ctx context.Context, name string, args ...string) string {
	GinkgoHelper()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "%s %s: %s", name, strings.Join(args, " "), out)
	return string(out)
}

// dpkgStatus is the package's dpkg status ("installed", "config-files"),
// or "" when dpkg has no record of it.
func dpkgStatus(ctx context.Context) string {
	GinkgoHelper()
	out, err := exec.CommandContext(ctx, "dpkg-query", "-W", "-f=${db:Status-Status}", packaging.Name).Output()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return "" // dpkg-query exits 1 for a package it does not know
	}
	Expect(err).NotTo(HaveOccurred())
	return string(out)
}

// runningFrom lists the processes in this process's mount namespace whose
// executable is one of paths. Processes in other mount namespaces (such
// as the hosts of a lab another test boots) name their executables by
// paths in their own file systems, so they are not counted.
func runningFrom(paths ...string) []string {
	GinkgoHelper()
	exes, err := filepath.Glob("/proc/[0-9]*/exe")
	Expect(err).NotTo(HaveOccurred())
	ourNS, err := os.Readlink("/proc/self/ns/mnt")
	Expect(err).NotTo(HaveOccurred())
	var found []string
	for _, exe := range exes {
		if ns, err := os.Readlink(filepath.Join(filepath.Dir(exe), "ns", "mnt")); err != nil || ns != ourNS {
			continue // gone, not ours to read, or another mount namespace
		}
		target, err := os.Readlink(exe)
		if err != nil {
			continue // gone, or not ours to read
		}
		for _, p := range paths {
			if target == p || target == p+" (deleted)" {
				found = append(found, exe+" -> "+target)
			}
		}
	}
	return found
}

// installable says why the package cannot be installed here for the
// test, or "" when it can.
func installable(ctx context.Context) string {
	if reason, ok := apttest.Available(); !ok {
		return reason
	}
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		return "systemd-analyze is not installed (make deps installs the systemd package)"
	}
	if st := dpkgStatus(ctx); st != "" {
		return fmt.Sprintf("%s is %s on this host (by hand, or by a killed earlier run: dpkg --purge %s); the test would replace it", packaging.Name, st, packaging.Name)
	}
	for _, p := range []string{"/usr/bin/ccm-agent", "/usr/bin/ccm-orch", "/usr/bin/ccm-broker", packaging.AgentConfig, packaging.PolicyConfig, packaging.AgentUnit, packaging.BrokerUnit, packaging.AgentState} {
		if _, err := os.Lstat(p); err == nil {
			return p + " exists on this host without the package; the test would overwrite it"
		}
	}
	return ""
}

var _ = Describe("the ccm-fleet package", Label("real"), func() {
	It("installs with its files, units and modes, starts nothing, and removes and purges cleanly", func(sctx SpecContext) {
		ctx, cancel := context.WithTimeout(sctx, 20*time.Minute) // building both packages took 8.5 min on 2 busy cores
		defer cancel()
		if reason := installable(ctx); reason != "" {
			Skip(reason)
		}

		By("building the amd64 .deb and .rpm")
		debFile, rpmFile := buildPackages(ctx)
		Expect(filepath.Base(debFile)).To(Equal("ccm-fleet_9.8.7~test.1-1_amd64.deb"))
		Expect(filepath.Base(rpmFile)).To(HavePrefix("ccm-fleet-9.8.7"))
		Expect(rpmFile).To(HaveSuffix(".x86_64.rpm"))

		By("checking the .rpm is an RPM")
		st, err := os.Stat(rpmFile)
		Expect(err).NotTo(HaveOccurred())
		Expect(st.Size()).To(BeNumerically(">", 1<<20), "both binaries are in it")
		f, err := os.Open(rpmFile)
		Expect(err).NotTo(HaveOccurred())
		lead := make([]byte, 4)
		_, err = io.ReadFull(f, lead)
		Expect(f.Close()).To(Succeed())
		Expect(err).NotTo(HaveOccurred())
		Expect(lead).To(Equal([]byte{0xed, 0xab, 0xee, 0xdb}), "the RPM lead's magic")
		_, err = exec.LookPath("rpm")
		Expect(err).NotTo(HaveOccurred(), "rpm is not installed: make deps installs it")
		Expect(run(ctx, "rpm", "-qp", "--queryformat", "%{NAME}", rpmFile)).To(Equal(packaging.Name))
		Expect(run(ctx, "rpm", "-qpc", rpmFile)).To(And(ContainSubstring(packaging.AgentConfig), ContainSubstring(packaging.PolicyConfig)))

		By("installing the .deb with dpkg, holding the host's package lock")
		install(ctx, debFile)
		Expect(dpkgStatus(ctx)).To(Equal("installed"))

		By("finding the stamped binaries in /usr/bin")
		for _, cmd := range packaging.Commands {
			path := "/usr/bin/" + cmd
			st, err := os.Stat(path)
			Expect(err).NotTo(HaveOccurred())
			Expect(st.Mode()).To(Equal(fs.FileMode(0o755)), path)
			Expect(run(ctx, path, "version")).To(Equal(fmt.Sprintf(
				"version: %s\ncommit: %s\nbuilt: %s\ngo: %s\n", testVersion, testCommit, testDate, goVersion(ctx))), path)
			Expect(run(ctx, path, "--version")).To(ContainSubstring("version: "+testVersion), path)
		}

		By("finding the state directory root-only and the configuration as conffiles")
		st, err = os.Stat(packaging.AgentState)
		Expect(err).NotTo(HaveOccurred())
		Expect(st.IsDir()).To(BeTrue())
		Expect(st.Mode().Perm()).To(Equal(fs.FileMode(0o700)))
		conffiles := run(ctx, "dpkg-query", "-W", "-f=${Conffiles}", packaging.Name)
		for _, f := range []string{packaging.AgentConfig, packaging.PolicyConfig, packaging.AgentEnv, packaging.BrokerEnv} {
			Expect(conffiles).To(ContainSubstring(" "+f+" "), "conffile %s", f)
			Expect(f).To(BeARegularFile())
		}
		Expect(conffiles).NotTo(ContainSubstring("/usr/bin"))

		By("verifying both units")
		agentUnit, err := os.ReadFile(packaging.AgentUnit)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(agentUnit)).To(ContainSubstring("\nExecStart=/usr/bin/ccm-agent run --config /etc/ccm/agent.yaml\n"))
		Expect(string(agentUnit)).To(ContainSubstring("\nStateDirectoryMode=0700\n"))
		brokerUnit, err := os.ReadFile(packaging.BrokerUnit)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(brokerUnit)).To(ContainSubstring("\nExecStart=/usr/bin/ccm-broker --listen ${CCM_BROKER_LISTEN} --store /var/lib/ccm-broker $CCM_BROKER_OPTS\n"))
		Expect(string(brokerUnit)).To(And(ContainSubstring("\nDynamicUser=yes\n"), ContainSubstring("\nStateDirectory=ccm-broker\n")))
		for _, unit := range []string{packaging.AgentUnit, packaging.BrokerUnit} {
			verify := exec.CommandContext(ctx, "systemd-analyze", "verify", unit)
			var stderr bytes.Buffer
			verify.Stdout, verify.Stderr = &stderr, &stderr
			err := verify.Run()
			Expect(err).NotTo(HaveOccurred(), "systemd-analyze verify %s: %s", unit, stderr.String())
			Expect(stderr.String()).To(BeEmpty(), "systemd-analyze verify %s has warnings", unit)
		}

		By("finding nothing started")
		Expect(runningFrom("/usr/bin/ccm-agent", "/usr/bin/ccm-orch", "/usr/bin/ccm-broker")).To(BeEmpty())
		if _, err := os.Stat("/run/systemd/system"); err == nil {
			for _, unit := range []string{"ccm-agent", "ccm-broker"} {
				out, _ := exec.CommandContext(ctx, "systemctl", "is-enabled", unit).Output()
				Expect(strings.TrimSpace(string(out))).To(Equal("disabled"), unit)
			}
		}

		By("removing: the programs and units go, the configuration stays")
		run(ctx, "dpkg", "-r", packaging.Name)
		Expect(dpkgStatus(ctx)).To(Equal("config-files"))
		for _, p := range []string{"/usr/bin/ccm-agent", "/usr/bin/ccm-orch", "/usr/bin/ccm-broker", packaging.AgentUnit, packaging.BrokerUnit, packaging.AgentState} {
			Expect(p).NotTo(BeAnExistingFile())
		}
		for _, p := range []string{packaging.AgentConfig, packaging.PolicyConfig, packaging.AgentEnv, packaging.BrokerEnv} {
			Expect(p).To(BeARegularFile())
		}

		By("purging: the configuration goes too")
		run(ctx, "dpkg", "--purge", packaging.Name)
		Expect(dpkgStatus(ctx)).To(BeEmpty())
		for _, p := range []string{packaging.AgentConfig, packaging.PolicyConfig, packaging.AgentEnv, packaging.BrokerEnv, "/etc/ccm"} {
			Expect(p).NotTo(BeAnExistingFile())
		}
	})
})

// install installs the .deb holding the host's package lock until the
// spec ends, and then purges it whatever happened (a no-op when it is not
// installed) and removes the agent state directory (which outlives a
// purge, as on a real host, but was made by the test).
func install(ctx context.Context, deb string) {
	GinkgoHelper()
	lockHost(ctx)
	run(ctx, "dpkg", "-i", deb)
}

// lockHost holds the host's package lock until the spec ends, and then
// purges the package whatever happened (a no-op when it is not installed)
// and removes the agent state directory (which outlives a purge, as on a
// real host, but was made by the test).
func lockHost(ctx context.Context) {
	GinkgoHelper()
	release, err := apttest.LockHost(ctx)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(release)
	DeferCleanup(func() {
		cctx, ccancel := context.WithTimeout(context.Background(), time.Minute)
		defer ccancel()
		if out, err := exec.CommandContext(cctx, "dpkg", "--purge", packaging.Name).CombinedOutput(); err != nil {
			GinkgoWriter.Printf("cleanup dpkg --purge %s: %v: %s\n", packaging.Name, err, out)
		}
		Expect(os.RemoveAll(packaging.AgentState)).To(Succeed())
	})
}

// built holds the packages the suite built once, for every spec.
var built struct {
	sync.Mutex
	deb, rpm string
	debB     string // the upgrade's .deb (buildUpgrade)
	rpmB     string // the upgrade's .rpm (buildUpgrade)
}

// buildPackages builds the amd64 .deb and .rpm with the test's stamp, once
// per suite run.
func buildPackages(ctx context.Context) (deb, rpm string) {
	GinkgoHelper()
	built.Lock()
	defer built.Unlock()
	if built.deb != "" {
		return built.deb, built.rpm
	}
	out, err := os.MkdirTemp("", "ccm-packages-")
	Expect(err).NotTo(HaveOccurred())
	packagesDir = out
	files := packager(ctx, out, testVersion, "deb,rpm")
	Expect(files).To(HaveLen(2))
	built.deb, built.rpm = files[0], files[1]
	return built.deb, built.rpm
}

// packager builds the amd64 packages of version in formats into out with
// the command make package runs (go run ./dist/packager), and returns the
// paths it printed. It runs as a process of its own, not in this suite's
// process: compressing the binaries under the race detector took 2.5 min
// (the suite runs with -race in make test), against about 10 s.
func packager(ctx context.Context, out, version, formats string) []string {
	GinkgoHelper()
	root, err := filepath.Abs("../..")
	Expect(err).NotTo(HaveOccurred())
	cmd := exec.CommandContext(ctx, "go", "run", "./dist/packager", "--root", root, "--out", out,
		"--version", version, "--commit", testCommit, "--date", testDate, "--arch", "amd64", "--format", formats)
	cmd.Dir = root
	cmd.Stderr = GinkgoWriter
	stdout, err := cmd.Output()
	Expect(err).NotTo(HaveOccurred(), "go run ./dist/packager (its log is in the spec's output)")
	return strings.Fields(string(stdout))
}

// packagesDir and upgradeDir are where buildPackages and buildUpgrade put
// the packages, removed after the suite.
var packagesDir, upgradeDir string

var _ = AfterSuite(func() {
	for _, dir := range []string{packagesDir, upgradeDir} {
		if dir != "" {
			Expect(os.RemoveAll(dir)).To(Succeed())
		}
	}
})

// goVersion is the Go version the binaries were built with: the go
// command's, as go build used it.
func goVersion(ctx context.Context) string {
	GinkgoHelper()
	return strings.TrimSpace(run(ctx, "go", "env", "GOVERSION"))
}
