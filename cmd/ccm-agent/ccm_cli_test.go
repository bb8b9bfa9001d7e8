package main

import (
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// These specs hold the local command line to what CCM's documentation and
// command line promise: docs/content/cli/_index.md and
// docs/content/resources/{file,exec}.md of github.com/choria-io/ccm.
var _ = Describe("ccm-agent ensure with CCM's spellings and defaults", func() {
	var dir string
	BeforeEach(func() { dir = GinkgoT().TempDir() })

	owner := func(path string) (string, string) {
		fi, err := os.Stat(path)
		Expect(err).ToNot(HaveOccurred())
		st := fi.Sys().(*syscall.Stat_t)
		u, err := user.LookupId(strconv.Itoa(int(st.Uid)))
		Expect(err).ToNot(HaveOccurred())
		g, err := user.LookupGroupId(strconv.Itoa(int(st.Gid)))
		Expect(err).ToNot(HaveOccurred())
		return u.Username, g.Name
	}

	It("ensure file F --content hi works without owner, group and mode: the current user's, 0644", func() {
		f := filepath.Join(dir, "motd")
		code, out, errOut := agent("ensure", "file", f, "--content", "hi")
		Expect(errOut).To(BeEmpty())
		Expect(code).To(Equal(0))
		Expect(out).To(ContainSubstring("file#" + f + " changed"))
		Expect(os.ReadFile(f)).To(Equal([]byte("hi")))
		fi, err := os.Stat(f)
		Expect(err).ToNot(HaveOccurred())
		Expect(fi.Mode().Perm()).To(Equal(os.FileMode(0o644)))
		me, err := user.Current()
		Expect(err).ToNot(HaveOccurred())
		grp, err := user.LookupGroupId(strconv.Itoa(os.Getgid()))
		Expect(err).ToNot(HaveOccurred())
		u, g := owner(f)
		Expect(u).To(Equal(me.Username))
		Expect(g).To(Equal(grp.Name))

		code, out, _ = agent("ensure", "file", f, "--content", "hi")
		Expect(code).To(Equal(0))
		Expect(out).To(ContainSubstring("stable"))
	})

	It("ensure file D directory defaults to mode 0755", func() {
		d := filepath.Join(dir, "d")
		code, _, errOut := agent("ensure", "file", d, "directory")
		Expect(errOut).To(BeEmpty())
		Expect(code).To(Equal(0))
		fi, err := os.Stat(d)
		Expect(err).ToNot(HaveOccurred())
		Expect(fi.IsDir()).To(BeTrue())
		Expect(fi.Mode().Perm()).To(Equal(os.FileMode(0o755)))
	})

	It("an explicit --mode still wins over the default", func() {
		f := filepath.Join(dir, "secret")
		code, _, _ := agent("ensure", "file", f, "--content", "x", "--mode", "0600")
		Expect(code).To(Equal(0))
		fi, err := os.Stat(f)
		Expect(err).ToNot(HaveOccurred())
		Expect(fi.Mode().Perm()).To(Equal(os.FileMode(0o600)))
	})

	It("accepts --exec-if: the command runs only when the guard exits 0", func() {
		ran := filepath.Join(dir, "ran")
		code, out, errOut := agent("ensure", "exec", "/bin/touch "+ran, "--exec-if", "/bin/false")
		Expect(errOut).To(BeEmpty())
		Expect(code).To(Equal(0))
		Expect(out).ToNot(ContainSubstring("failed"))
		Expect(ran).ToNot(BeAnExistingFile())

		code, _, _ = agent("ensure", "exec", "/bin/touch "+ran, "--exec-if", "/bin/true")
		Expect(code).To(Equal(0))
		Expect(ran).To(BeAnExistingFile())
	})

	It("accepts --exec-unless: the command runs only when the guard exits non-zero", func() {
		ran := filepath.Join(dir, "ran")
		code, _, errOut := agent("ensure", "exec", "/bin/touch "+ran, "--exec-unless", "/bin/true")
		Expect(errOut).To(BeEmpty())
		Expect(code).To(Equal(0))
		Expect(ran).ToNot(BeAnExistingFile())

		code, _, _ = agent("ensure", "exec", "/bin/touch "+ran, "--exec-unless", "/bin/false")
		Expect(code).To(Equal(0))
		Expect(ran).To(BeAnExistingFile())
	})
})
