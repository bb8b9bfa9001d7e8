package packaging_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/internal/packaging"
)

// testVersionB is the version the upgrade goes to.
const testVersionB = "v9.8.8-test.1"

// apacheLicenseSHA256 is the SHA-256 of the Apache License 2.0 text as
// the Apache Software Foundation publishes it (LICENSE-2.0.txt).
const apacheLicenseSHA256 = "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30"

// wants is where enabling the agent puts its link.
const wants = "/etc/systemd/system/multi-user.target.wants/ccm-agent.service"

// docPaths are the manual pages and completion scripts the .deb installs.
func docPaths() []string {
	var paths []string
	for _, cmd := range packaging.Commands {
		paths = append(paths,
			"/usr/share/man/man1/"+cmd+".1.gz",
			"/usr/share/bash-completion/completions/"+cmd,
			"/usr/share/zsh/vendor-completions/_"+cmd,
			"/usr/share/fish/vendor_completions.d/"+cmd+".fish")
	}
	return paths
}

// fakeSystemd is a systemctl that records its arguments, one call a line,
// and a way to run commands as if systemd were running: in a mount
// namespace of their own with an empty /run holding /run/systemd/system,
// which the maintainer scripts test, and the fake first on PATH. The host
// sees none of it.
type fakeSystemd struct {
	bin, log string
}

func newFakeSystemd() *fakeSystemd {
	GinkgoHelper()
	dir := GinkgoT().TempDir()
	f := &fakeSystemd{bin: filepath.Join(dir, "bin"), log: filepath.Join(dir, "systemctl.log")}
	Expect(os.Mkdir(f.bin, 0o755)).To(Succeed())
	Expect(os.WriteFile(filepath.Join(f.bin, "systemctl"),
		[]byte(fmt.Sprintf("#!/bin/sh\nprintf '%%s\\n' \"$*\" >> %s\n", f.log)), 0o755)).To(Succeed())
	return f
}

// unshareReason says why commands cannot be run in a mount namespace of
// their own here, or "" when they can.
func unshareReason(ctx context.Context) string {
	out, err := exec.CommandContext(ctx, "unshare", "--mount", "--propagation", "private",
		"sh", "-c", "mount -t tmpfs ccm-test /mnt").CombinedOutput()
	if err != nil {
		return fmt.Sprintf("cannot mount in a mount namespace of our own (unshare --mount): %v: %s", err, out)
	}
	return ""
}

// run runs name with args as if systemd were running, failing the spec
// when it fails, and returns the systemctl calls it made.
func (f *fakeSystemd) run(ctx context.Context, name string, args ...string) []string {
	GinkgoHelper()
	Expect(os.RemoveAll(f.log)).To(Succeed())
	argv := append([]string{"--mount", "--propagation", "private", "sh", "-c",
		`mount -t tmpfs ccm-test /run && mkdir -p /run/systemd/system && exec "$@"`, "sh", name}, args...)
	cmd := exec.CommandContext(ctx, "unshare", argv...)
	cmd.Env = append(os.Environ(), "PATH="+f.bin+":"+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "%s %s: %s", name, strings.Join(args, " "), out)
	return f.calls()
}

func (f *fakeSystemd) calls() []string {
	GinkgoHelper()
	data, err := os.ReadFile(f.log)
	if os.IsNotExist(err) {
		return nil
	}
	Expect(err).NotTo(HaveOccurred())
	return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
}

// buildUpgrade builds the amd64 .deb and .rpm of testVersionB, once per
// suite run (one packager run builds the binaries for both).
func buildUpgrade(ctx context.Context) (deb, rpm string) {
	GinkgoHelper()
	built.Lock()
	defer built.Unlock()
	if built.debB != "" {
		return built.debB, built.rpmB
	}
	// Not the spec's TempDir: the packages outlive the spec that built
	// them, for the next spec that upgrades. AfterSuite removes them.
	out, err := os.MkdirTemp("", "ccm-packages-upgrade-")
	Expect(err).NotTo(HaveOccurred())
	upgradeDir = out
	files := packager(ctx, out, testVersionB, "deb,rpm")
	Expect(files).To(HaveLen(2))
	built.debB, built.rpmB = files[0], files[1]
	return built.debB, built.rpmB
}

// gunzip is the content of a gzipped file.
func gunzip(path string) string {
	GinkgoHelper()
	f, err := os.Open(path)
	Expect(err).NotTo(HaveOccurred())
	defer f.Close()
	zr, err := gzip.NewReader(f)
	Expect(err).NotTo(HaveOccurred())
	data, err := io.ReadAll(zr)
	Expect(err).NotTo(HaveOccurred())
	return string(data)
}

var _ = Describe("the licence", func() {
	It("is the standard Apache License 2.0 text, with the copyright in NOTICE and the Debian copyright file", func() {
		data, err := os.ReadFile("../../LICENSE")
		Expect(err).NotTo(HaveOccurred())
		sum := sha256.Sum256(data)
		Expect(hex.EncodeToString(sum[:])).To(Equal(apacheLicenseSHA256))
		notice, err := os.ReadFile("../../NOTICE")
		Expect(err).NotTo(HaveOccurred())
		Expect(string(notice)).To(ContainSubstring("Copyright 2026 The CCM Fleet Authors"))

		By("writing the Debian copyright file in the machine-readable format (DEP-5)")
		copyright, err := os.ReadFile("../../dist/copyright")
		Expect(err).NotTo(HaveOccurred())
		paragraphs := strings.Split(strings.TrimSpace(string(copyright)), "\n\n")
		Expect(paragraphs).To(HaveLen(3), "header, files, licence")
		Expect(paragraphs[0]).To(HavePrefix("Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n"))
		Expect(paragraphs[0]).To(ContainSubstring("\nUpstream-Name: ccm-fleet\n"))
		Expect(paragraphs[1]).To(Equal("Files: *\nCopyright: 2026 The CCM Fleet Authors\nLicense: Apache-2.0"))
		Expect(paragraphs[2]).To(HavePrefix("License: Apache-2.0\n"))
		Expect(paragraphs[2]).To(ContainSubstring(`/usr/share/common-licenses/Apache-2.0`))
		for _, line := range strings.Split(paragraphs[2], "\n")[1:] {
			Expect(line).To(HavePrefix(" "), "a continuation line of the licence field")
		}
	})
})

var _ = Describe("the ccm-fleet .rpm", Label("real"), func() {
	It("says its licence and what it is, uses RPM's paths and marks the licence %license", func(sctx SpecContext) {
		ctx, cancel := context.WithTimeout(sctx, 20*time.Minute)
		defer cancel()
		_, err := exec.LookPath("rpm")
		Expect(err).NotTo(HaveOccurred(), "rpm is not installed: make deps installs it (the .rpm is checked with rpm itself, never skipped)")
		_, rpmFile := buildPackages(ctx)
		h := rpmPackage{ctx: ctx, path: rpmFile}

		Expect(h.tag("LICENSE")).To(Equal("Apache-2.0"))
		Expect(h.tag("SUMMARY")).To(Equal(packaging.Summary))
		Expect(h.tag("DESCRIPTION")).To(Equal(packaging.Description))
		Expect(strings.Count(h.tag("DESCRIPTION"), "\n")).To(BeNumerically(">=", 10), "a description of several paragraphs")

		files := h.files()
		Expect(files).To(HaveKeyWithValue(packaging.RPMAgentEnv, rpmConfig|rpmNoReplace))
		Expect(files).To(HaveKeyWithValue(packaging.RPMBrokerEnv, rpmConfig|rpmNoReplace))
		Expect(files).NotTo(HaveKey(packaging.AgentEnv))
		Expect(files).NotTo(HaveKey(packaging.BrokerEnv))
		Expect(files).To(HaveKey(packaging.RPMAgentUnit))
		Expect(files).To(HaveKeyWithValue(packaging.RPMLicenseDir+"/LICENSE", rpmLicenseFile))
		Expect(files).To(HaveKeyWithValue(packaging.RPMLicenseDir+"/NOTICE", rpmLicenseFile))
		Expect(files).NotTo(HaveKey(packaging.Copyright), "the Debian copyright file is Debian's")
		Expect(files).To(HaveKey(packaging.ConfigDir), "owned, so that rpm -e removes it")
		Expect(files).To(HaveKey(packaging.RPMLicenseDir), "owned, so that rpm -e removes it")
		for _, cmd := range packaging.Commands {
			Expect(files).To(HaveKey("/usr/share/man/man1/" + cmd + ".1.gz"))
			Expect(files).To(HaveKey("/usr/share/bash-completion/completions/" + cmd))
			Expect(files).To(HaveKey("/usr/share/zsh/site-functions/_" + cmd))
			Expect(files).To(HaveKey("/usr/share/fish/vendor_completions.d/" + cmd + ".fish"))
		}

		By("running its scriptlets as rpm would, with systemd running")
		if reason := unshareReason(ctx); reason != "" {
			Skip(reason)
		}
		sd := newFakeSystemd()
		scriptlet := func(tag string, arg string) []string {
			GinkgoHelper()
			script := filepath.Join(GinkgoT().TempDir(), "scriptlet")
			Expect(os.WriteFile(script, []byte(h.tag(tag)), 0o755)).To(Succeed())
			return sd.run(ctx, "sh", script, arg)
		}
		units := "ccm-agent.service ccm-broker.service"
		Expect(scriptlet("POSTIN", "1")).To(Equal([]string{"--system daemon-reload"}), "install: nothing started")
		Expect(scriptlet("PREUN", "1")).To(BeEmpty(), "upgrade: the old package's %preun leaves the units running")
		Expect(scriptlet("POSTUN", "1")).To(Equal([]string{"--system daemon-reload", "try-restart " + units}), "upgrade: running units restart")
		Expect(scriptlet("PREUN", "0")).To(Equal([]string{"--no-reload disable --now " + units}), "erase: stopped and disabled")
		Expect(scriptlet("POSTUN", "0")).To(Equal([]string{"--system daemon-reload"}), "erase: nothing restarted")
	})
})

var _ = Describe("the ccm-fleet .deb's lifecycle", Label("real"), func() {
	It("installs, upgrades, removes and purges as Debian expects: stops on remove, restarts on upgrade, cleans links on purge", func(sctx SpecContext) {
		ctx, cancel := context.WithTimeout(sctx, 20*time.Minute)
		defer cancel()
		if reason := installable(ctx); reason != "" {
			Skip(reason)
		}
		if reason := unshareReason(ctx); reason != "" {
			Skip(reason)
		}
		if _, err := os.Lstat(wants); err == nil {
			Skip(wants + " exists on this host without the package; the test would delete it")
		}
		DeferCleanup(func() {
			if err := os.Remove(wants); err != nil && !os.IsNotExist(err) {
				Fail(fmt.Sprintf("cleanup: %v", err))
			}
		})
		debA, _ := buildPackages(ctx)
		debB, _ := buildUpgrade(ctx)
		sd := newFakeSystemd()
		units := "ccm-agent.service ccm-broker.service"

		By("installing version A: systemd reloads, nothing is started")
		lockHost(ctx)
		Expect(sd.run(ctx, "dpkg", "-i", debA)).To(Equal([]string{"--system daemon-reload"}))
		Expect(dpkgStatus(ctx)).To(Equal("installed"))
		for _, p := range append(docPaths(), packaging.Copyright, packaging.AgentEnv, packaging.BrokerEnv) {
			Expect(p).To(BeARegularFile())
		}
		Expect(packaging.RPMAgentEnv).NotTo(BeAnExistingFile())

		By("describing itself in more than one line")
		description := run(ctx, "dpkg-query", "-W", "-f=${Description}", packaging.Name)
		Expect(strings.Split(description, "\n")[0]).To(Equal(packaging.Summary))
		Expect(strings.Count(description, "\n ")).To(BeNumerically(">=", 10), description)

		By("setting no facts in the installed agent.yaml")
		agentYAML, err := os.ReadFile(packaging.AgentConfig)
		Expect(err).NotTo(HaveOccurred())
		for _, line := range strings.Split(string(agentYAML), "\n") {
			Expect(line).NotTo(MatchRegexp(`^\s*(facts|facts_file)\s*:`), "an uncommented facts setting")
		}

		By("finding manual pages made from the commands, and completion that completes")
		page := gunzip("/usr/share/man/man1/ccm-orch.1.gz")
		Expect(page).To(HavePrefix(`.TH "CCM\-ORCH" 1 "2026\-01\-02" "ccm\-fleet v9.8.7\-test.1"`))
		Expect(page).To(ContainSubstring("\n.SH COMMANDS\n"))
		Expect(page).To(ContainSubstring(`.SS "ensure file`))
		Expect(page).To(ContainSubstring(`.B "\-\-reply\-timeout=`))
		Expect(gunzip("/usr/share/man/man1/ccm-agent.1.gz")).To(ContainSubstring(`.SS "run`))
		if _, err := exec.LookPath("man"); err == nil {
			cmd := exec.CommandContext(ctx, "man", "--warnings", "-l", "/usr/share/man/man1/ccm-orch.1.gz")
			cmd.Env = append(os.Environ(), "MANWIDTH=80", "MANPAGER=cat", "PAGER=cat")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			Expect(cmd.Run()).To(Succeed(), stderr.String())
			Expect(stderr.String()).To(BeEmpty(), "man's warnings")
			Expect(stdout.String()).To(ContainSubstring("ccm-orch - CCM Fleet orchestrator"))
		}
		complete := run(ctx, "bash", "-c", `source /usr/share/bash-completion/completions/ccm-orch
COMP_WORDS=(ccm-orch ensure fi); COMP_CWORD=2; _ccm-orch_bash_autocomplete; echo "${COMPREPLY[@]}"`)
		Expect(strings.Fields(complete)).To(Equal([]string{"file"}))
		// make deps installs zsh and fish: both parse their scripts, and
		// fish completes from the installed one.
		run(ctx, "zsh", "-n", "/usr/share/zsh/vendor-completions/_ccm-orch")
		run(ctx, "fish", "-n", "/usr/share/fish/vendor_completions.d/ccm-orch.fish")
		complete = run(ctx, "fish", "-c", `source /usr/share/fish/vendor_completions.d/ccm-orch.fish; complete -C "ccm-orch ensure fi"`)
		Expect(strings.Fields(complete)).To(Equal([]string{"file"}))

		By("enabling the agent (the link systemctl enable makes) and editing its environment")
		Expect(os.MkdirAll(filepath.Dir(wants), 0o755)).To(Succeed())
		Expect(os.Symlink(packaging.AgentUnit, wants)).To(Succeed())
		const canary = "CCM_SERVER=nats://canary-kept-over-upgrade.example.net:4222\n"
		Expect(os.WriteFile(packaging.AgentEnv, []byte(canary), 0o644)).To(Succeed())

		By("upgrading to version B: the running units restart on the new binaries, none is stopped first")
		calls := sd.run(ctx, "dpkg", "--force-confold", "-i", debB)
		Expect(calls).To(Equal([]string{"--system daemon-reload", "try-restart " + units}))
		Expect(run(ctx, "/usr/bin/ccm-agent", "--version")).To(ContainSubstring("version: " + testVersionB))
		Expect(os.ReadFile(packaging.AgentEnv)).To(BeEquivalentTo(canary), "the edited conffile is kept")
		Expect(wants).To(BeAnExistingFile(), "still enabled")

		By("removing: the units are stopped, programs and docs go, configuration and the enabled link stay")
		Expect(sd.run(ctx, "dpkg", "-r", packaging.Name)).To(Equal([]string{"stop " + units, "--system daemon-reload"}))
		Expect(dpkgStatus(ctx)).To(Equal("config-files"))
		for _, p := range append(docPaths(), "/usr/bin/ccm-agent", packaging.AgentUnit, packaging.Copyright) {
			Expect(p).NotTo(BeAnExistingFile())
		}
		Expect(packaging.AgentEnv).To(BeARegularFile())
		_, err = os.Lstat(wants)
		Expect(err).NotTo(HaveOccurred(), "a removal keeps the enabled link, so that reinstalling restores it")

		By("purging: the configuration and the enabled link go")
		Expect(sd.run(ctx, "dpkg", "--purge", packaging.Name)).To(Equal([]string{"--system daemon-reload"}))
		Expect(dpkgStatus(ctx)).To(BeEmpty())
		_, err = os.Lstat(wants)
		Expect(os.IsNotExist(err)).To(BeTrue(), "the multi-user.target.wants link is gone: %v", err)
		for _, p := range []string{packaging.AgentConfig, packaging.AgentEnv, "/etc/ccm"} {
			Expect(p).NotTo(BeAnExistingFile())
		}
	})
})
