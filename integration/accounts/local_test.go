package accounts_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"
)

// agent runs ccm-agent in this namespace and returns its exit code and
// output.
func agent(args ...string) (int, string) {
	GinkgoHelper()
	s, err := gexec.Start(exec.Command(agentBin, args...), GinkgoWriter, GinkgoWriter)
	Expect(err).NotTo(HaveOccurred())
	Eventually(s).WithTimeout(60 * time.Second).Should(gexec.Exit())
	return s.ExitCode(), string(s.Out.Contents()) + string(s.Err.Contents())
}

func getent(db, key string) string {
	GinkgoHelper()
	out, _ := exec.Command("getent", db, key).Output()
	return strings.TrimSpace(string(out))
}

var _ = Describe("ccm-agent ensure user and group on this host", func() {
	BeforeEach(func() {
		DeferCleanup(func() {
			_ = exec.Command("userdel", "-r", "ccmlocal").Run()
			_ = exec.Command("groupdel", "ccmlocalgrp").Run()
		})
	})

	It("creates a group and a user from the command line, says what a noop would do, and is stable", func() {
		code, out := agent("ensure", "group", "ccmlocalgrp", "--gid", "2601", "--noop")
		Expect(code).To(Equal(5), out)
		Expect(out).To(ContainSubstring("Would have created the group"))
		Expect(getent("group", "ccmlocalgrp")).To(BeEmpty())
		code, out = agent("ensure", "group", "ccmlocalgrp", "--gid", "2601")
		Expect(code).To(Equal(0), out)
		Expect(getent("group", "ccmlocalgrp")).To(Equal("ccmlocalgrp:x:2601:"))

		args := []string{"ensure", "user", "ccmlocal", "--uid", "2602", "--groups", "ccmlocalgrp,adm", "--shell", "/bin/bash", "--home", "/home/ccmlocal", "--manage-home", "--comment", "Local spec", "--expiry", "2099-01-31"}
		code, out = agent(append(args, "--noop")...)
		Expect(code).To(Equal(5), out)
		Expect(out).To(ContainSubstring("Would have created the user"))
		code, out = agent(args...)
		Expect(code).To(Equal(0), out)
		Expect(getent("passwd", "ccmlocal")).To(HavePrefix("ccmlocal:x:2602:"))
		Expect(getent("passwd", "ccmlocal")).To(HaveSuffix(":Local spec:/home/ccmlocal:/bin/bash"))
		Expect(getent("group", "ccmlocalgrp")).To(Equal("ccmlocalgrp:x:2601:ccmlocal"))
		Expect("/home/ccmlocal").To(BeADirectory())
		code, out = agent(append(args, "--noop")...)
		Expect(code).To(Equal(0), out)

		code, out = agent("ensure", "user", "ccmlocal", "--shell", "/bin/sh", "--noop")
		Expect(code).To(Equal(5), out)
		Expect(out).To(ContainSubstring("Would have changed shell /bin/bash to /bin/sh"))
		code, out = agent("status", "user", "ccmlocal")
		Expect(code).To(Equal(0), out)
		Expect(out).To(ContainSubstring("ccmlocal"))
	})

	It("refuses a clear-text password and a bad name before changing anything", func() {
		code, out := agent("ensure", "user", "ccmlocal", "--password", "hunter2hunter2")
		Expect(code).To(Equal(1), out)
		Expect(out).To(ContainSubstring("property password: is not a crypt(3) hash"))
		Expect(out).NotTo(ContainSubstring("hunter2hunter2"))
		code, out = agent("ensure", "group", "-x")
		Expect(code).NotTo(Equal(0), out)
		Expect(getent("passwd", "ccmlocal")).To(BeEmpty())
	})

	It("applies a manifest that runs the user and group a file names before the file", func() {
		dir := GinkgoT().TempDir()
		manifest := filepath.Join(dir, "accounts.yaml")
		Expect(os.WriteFile(manifest, []byte(strings.ReplaceAll(`
ccm:
  resources:
    - file:
        - DIR/owned:
            content: "x\n"
            owner: ccmlocal
            group: ccmlocalgrp
            mode: "0600"
    - user:
        - ccmlocal: {uid: 2603, group: ccmlocalgrp}
    - group:
        - ccmlocalgrp: {gid: 2604}
`, "DIR", dir)), 0o644)).To(Succeed())
		code, out := agent("apply", manifest)
		Expect(code).To(Equal(0), out)
		Expect(getent("passwd", "ccmlocal")).To(HavePrefix("ccmlocal:x:2603:2604:"))
		code, out = agent("apply", manifest)
		Expect(code).To(Equal(0), out)
	})

	It("applies examples/accounts.yaml: templated uid and hash from sensitive data, home made, file owned", func() {
		DeferCleanup(func() {
			_ = exec.Command("userdel", "-r", "deploy").Run()
			_ = exec.Command("groupdel", "deployers").Run()
		})
		example := filepath.Join("..", "..", "examples", "accounts.yaml")
		code, out := agent("apply", example)
		Expect(code).To(Equal(0), out)
		Expect(getent("passwd", "deploy")).To(Equal("deploy:x:2001:3001::/home/deploy:/bin/bash"))
		Expect(getent("group", "deployers")).To(Equal("deployers:x:3001:"))
		Expect(getent("group", "adm")).To(ContainSubstring("deploy"))
		Expect(strings.Split(getent("shadow", "deploy"), ":")[1]).To(HavePrefix("$6$examplesalt$"))
		Expect(out).NotTo(ContainSubstring("examplesalt"))
		info, err := os.Stat("/home/deploy/.profile")
		Expect(err).NotTo(HaveOccurred())
		Expect(info.Mode().Perm()).To(Equal(os.FileMode(0o640)))
		code, out = agent("apply", example, "--noop")
		Expect(code).To(Equal(0), out)
	})
})
