package packaging_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/internal/packaging"
)

// rpmSystemDirs are the directories the .rpm puts files in that other
// packages own on RPM-based systems (filesystem, systemd, bash-completion,
// zsh, fish), so the .rpm must not own them. On this Debian host rpm
// creates those that are missing and leaves them unowned; the spec
// removes them afterwards. Any other directory the .rpm creates, it must
// own, so that rpm -e removes it.
func rpmSystemDirs() []string {
	return []string{
		"/etc/sysconfig", "/usr/bin", "/usr/lib/systemd/system", "/usr/share/man/man1",
		"/usr/share/licenses", "/usr/share/bash-completion/completions",
		"/usr/share/zsh/site-functions", "/usr/share/fish/vendor_completions.d", "/var/lib",
	}
}

// isRPMSystemDir reports whether dir is one of rpmSystemDirs or a
// directory above one.
func isRPMSystemDir(dir string) bool {
	for _, d := range rpmSystemDirs() {
		if d == dir || strings.HasPrefix(d, dir+"/") {
			return true
		}
	}
	return false
}

// ancestors are the directories above path, nearest first, without "/".
func ancestors(path string) []string {
	var dirs []string
	for d := filepath.Dir(path); d != "/"; d = filepath.Dir(d) {
		dirs = append(dirs, d)
	}
	return dirs
}

// exists reports whether path exists (a dangling link counts).
func exists(path string) bool {
	_, err := os.Lstat(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		Fail(fmt.Sprintf("lstat %s: %v", path, err))
	}
	return err == nil
}

// rpmInstalled is the NVRA rpm reports installed for the package, or ""
// when it is not installed.
func rpmInstalled(ctx context.Context) string {
	GinkgoHelper()
	out, err := exec.CommandContext(ctx, "rpm", "-q", packaging.Name).Output()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 1 {
		return ""
	}
	Expect(err).NotTo(HaveOccurred(), "rpm -q %s", packaging.Name)
	return strings.TrimSpace(string(out))
}

// rpmVerify is rpm -V's report on the installed package: "" when every
// file is as packaged.
func rpmVerify(ctx context.Context) string {
	GinkgoHelper()
	out, err := exec.CommandContext(ctx, "rpm", "-V", packaging.Name).Output()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		Expect(err).NotTo(HaveOccurred(), "rpm -V %s", packaging.Name)
	}
	return strings.TrimSpace(string(out))
}

// runRPM runs rpm with args as fakeSystemd.run does, with the fake
// systemctl also mounted over /usr/bin/systemctl: rpm runs scriptlets
// with a PATH of its own (/sbin:/bin:/usr/sbin:/usr/bin), which would
// find the host's. It returns the systemctl calls the scriptlets made.
func (f *fakeSystemd) runRPM(ctx context.Context, args ...string) []string {
	GinkgoHelper()
	Expect("/usr/bin/systemctl").To(BeARegularFile(), "the fake systemctl is mounted over it (make deps installs systemd)")
	return f.run(ctx, "sh", append([]string{"-c", `mount --bind "$0" /usr/bin/systemctl && exec rpm "$@"`,
		filepath.Join(f.bin, "systemctl")}, args...)...)
}

var _ = Describe("the ccm-fleet .rpm on this host", Label("real"), func() {
	It("installs with rpm -i, upgrades with rpm -U and erases with rpm -e, leaving no file or unowned directory behind", func(sctx SpecContext) {
		ctx, cancel := context.WithTimeout(sctx, 20*time.Minute) // building both packages took 8.5 min on 2 busy cores
		defer cancel()
		_, err := exec.LookPath("rpm")
		Expect(err).NotTo(HaveOccurred(), "rpm is not installed: run make deps (as root) to install it")
		Expect(os.Geteuid()).To(Equal(0), "installing the .rpm needs root")
		Expect(unshareReason(ctx)).To(BeEmpty(), "the scriptlets run in a mount namespace of their own")

		_, rpmA := buildPackages(ctx)
		_, rpmB := buildUpgrade(ctx)
		files := rpmPackage{ctx: ctx, path: rpmA}.files()
		paths := make([]string, 0, len(files))
		for p := range files {
			paths = append(paths, p)
		}
		sort.Strings(paths)

		By("finding the host as the spec needs it: no ccm-fleet installed by rpm or dpkg, none of its files")
		// The .deb's specs share the host's package lock (lockHost), so
		// none of them runs while this one does, and its cleanup purges
		// a .deb left installed.
		lockHost(ctx)
		Expect(rpmInstalled(ctx)).To(BeEmpty(), "%s is installed by rpm on this host (by hand, or by a killed earlier run: rpm -e %s)", packaging.Name, packaging.Name)
		Expect(dpkgStatus(ctx)).To(BeEmpty(), "%s is installed by dpkg on this host", packaging.Name)
		for _, p := range paths {
			for _, q := range []string{p, p + ".rpmsave", p + ".rpmnew"} {
				Expect(exists(q)).To(BeFalse(), "%s exists on this host without the package; the spec would replace it", q)
			}
		}
		// Every directory above a packaged path, and whether it was here
		// before: after rpm -e the host must be as it was.
		existed := map[string]bool{}
		for _, p := range paths {
			for _, d := range ancestors(p) {
				existed[d] = exists(d)
			}
		}
		DeferCleanup(func() {
			cctx, ccancel := context.WithTimeout(context.Background(), time.Minute)
			defer ccancel()
			if rpmInstalled(cctx) != "" {
				// --noscripts: the scriptlets would reach the host's systemd.
				out, err := exec.CommandContext(cctx, "rpm", "-e", "--noscripts", packaging.Name).CombinedOutput()
				Expect(err).NotTo(HaveOccurred(), "cleanup: rpm -e %s: %s", packaging.Name, out)
			}
			for _, p := range paths {
				for _, q := range []string{p, p + ".rpmsave", p + ".rpmnew"} {
					Expect(os.RemoveAll(q)).To(Succeed())
				}
			}
			var made []string
			for d, was := range existed {
				if !was {
					made = append(made, d)
				}
			}
			// Deepest first, each only when empty.
			sort.Slice(made, func(i, j int) bool { return len(made[i]) > len(made[j]) })
			for _, d := range made {
				if err := os.Remove(d); err != nil && !errors.Is(err, os.ErrNotExist) {
					Fail(fmt.Sprintf("cleanup: %v", err))
				}
			}
		})

		sd := newFakeSystemd()
		units := "ccm-agent.service ccm-broker.service"

		By("installing version A with rpm -i: systemd reloads, nothing is started")
		// nFPM writes no Requires, so rpm -i needs no --nodeps though
		// this host's rpm database is empty.
		Expect(sd.runRPM(ctx, "-i", rpmA)).To(Equal([]string{"--system daemon-reload"}))
		Expect(rpmInstalled(ctx)).To(Equal("ccm-fleet-9.8.7~test.1-1.x86_64"))
		for _, p := range paths {
			Expect(exists(p)).To(BeTrue(), "%s installed", p)
		}
		Expect(run(ctx, "/usr/bin/ccm-agent", "--version")).To(ContainSubstring("version: " + testVersion))
		st, err := os.Stat(packaging.AgentState)
		Expect(err).NotTo(HaveOccurred())
		Expect(st.Mode().Perm()).To(Equal(os.FileMode(0o700)))
		Expect(rpmVerify(ctx)).To(BeEmpty(), "rpm -V finds every file as packaged")

		By("owning every directory it made, but those other packages own on RPM-based systems")
		var made []string
		for d, was := range existed {
			if !was && !isRPMSystemDir(d) {
				made = append(made, d)
			}
		}
		sort.Strings(made)
		Expect(made).To(ContainElements("/etc/ccm", packaging.RPMLicenseDir))
		var unowned []string
		for _, d := range made {
			out, err := exec.CommandContext(ctx, "rpm", "-qf", "--queryformat", "%{NAME}", d).Output()
			if err != nil || string(out) != packaging.Name {
				unowned = append(unowned, d)
			}
		}
		Expect(unowned).To(BeEmpty(), "directories the .rpm made that it does not own (rpm -qf), which rpm -e would leave behind")

		By("editing a configuration file: rpm -V reports it, as configuration")
		const canary = "CCM_SERVER=nats://canary-kept-over-upgrade.example.net:4222\n"
		Expect(os.WriteFile(packaging.RPMAgentEnv, []byte(canary), 0o644)).To(Succeed())
		Expect(rpmVerify(ctx)).To(MatchRegexp(`^S\.5\.\.\.\.T\.  c %s$`, packaging.RPMAgentEnv))

		By("upgrading to version B with rpm -U: running units restart on the new binaries, the edit is kept")
		Expect(sd.runRPM(ctx, "-U", rpmB)).To(Equal([]string{
			"--system daemon-reload",                         // B's %post
			"--system daemon-reload", "try-restart " + units, // A's %postun
		}))
		Expect(rpmInstalled(ctx)).To(Equal("ccm-fleet-9.8.8~test.1-1.x86_64"))
		Expect(run(ctx, "/usr/bin/ccm-agent", "--version")).To(ContainSubstring("version: " + testVersionB))
		Expect(os.ReadFile(packaging.RPMAgentEnv)).To(BeEquivalentTo(canary), "%config(noreplace) keeps the edited file")
		Expect(exists(packaging.RPMAgentEnv+".rpmnew")).To(BeFalse(), "the packaged file did not change, so there is no .rpmnew")
		Expect(rpmVerify(ctx)).To(MatchRegexp(`^S\.5\.\.\.\.T\.  c %s$`, packaging.RPMAgentEnv), "only the edited file differs")

		By("erasing with rpm -e: the units are disabled and stopped, every file and directory it owned goes")
		Expect(sd.runRPM(ctx, "-e", packaging.Name)).To(Equal([]string{
			"--no-reload disable --now " + units, // %preun
			"--system daemon-reload",             // %postun
		}))
		Expect(rpmInstalled(ctx)).To(BeEmpty())
		for _, p := range paths {
			Expect(exists(p)).To(BeFalse(), "%s removed", p)
		}
		for _, d := range made {
			Expect(exists(d)).To(BeFalse(), "%s removed", d)
		}
		By("keeping only the edited configuration, as .rpmsave")
		Expect(os.ReadFile(packaging.RPMAgentEnv + ".rpmsave")).To(BeEquivalentTo(canary))
		var left []string
		for _, p := range paths {
			for _, q := range []string{p + ".rpmsave", p + ".rpmnew"} {
				if exists(q) {
					left = append(left, q)
				}
			}
		}
		Expect(left).To(Equal([]string{packaging.RPMAgentEnv + ".rpmsave"}))
		Expect(slices.Contains(rpmSystemDirs(), filepath.Dir(packaging.RPMAgentEnv))).To(BeTrue(),
			"the .rpmsave is in a directory other packages own on RPM-based systems")
	})
})
