package main

import (
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// Issue 39, finding 8: root running "ensure" in a directory another user
// controls took that user's ./.hiera and ./.env into its templates. Those
// files are read only when owned by root or the invoking user and not
// writable by group or others; otherwise one warning line says why.
var _ = Describe("ccm-agent ensure reads ./.hiera and ./.env only when it may trust them", func() {
	const (
		hieraCanary = "hiera-canary-5e1"
		envCanary   = "dotenv-canary-9b4"
		other       = 4242 // a uid that is neither root nor this process
	)
	var dir, out string

	BeforeEach(func() {
		if os.Geteuid() != 0 {
			Skip("needs root to give the files another owner")
		}
		dir = GinkgoT().TempDir()
		GinkgoT().Chdir(dir)
		out = filepath.Join(dir, "out")
		Expect(os.WriteFile(".hiera", []byte("data: {motd: "+hieraCanary+"}\n"), 0o644)).To(Succeed())
		Expect(os.WriteFile(".env", []byte("CCM_TRUST_CANARY="+envCanary+"\n"), 0o644)).To(Succeed())
	})

	ensure := func() (int, string) {
		code, _, errOut := agent("ensure", "file", out, "--content",
			"{{ lookup('data.motd', 'no-data') }} {{ lookup('environ.CCM_TRUST_CANARY', 'no-env') }}")
		return code, errOut
	}

	It("reads them when root owns them and only root may write them", func() {
		code, errOut := ensure()
		Expect(errOut).To(BeEmpty())
		Expect(code).To(Equal(0))
		Expect(os.ReadFile(out)).To(Equal([]byte(hieraCanary + " " + envCanary)))
	})

	DescribeTable("skips them, with one warning line each, and runs without them",
		func(plant func(name string), why string) {
			plant(".hiera")
			plant(".env")
			code, errOut := ensure()
			Expect(code).To(Equal(0))
			Expect(os.ReadFile(out)).To(Equal([]byte("no-data no-env")))
			Expect(errOut).To(Equal(
				"ccm-agent: warning: skipped ./.hiera: " + why + "\n" +
					"ccm-agent: warning: skipped ./.env: " + why + "\n"))
		},
		Entry("owned by another user", func(name string) {
			Expect(os.Chown(name, other, other)).To(Succeed())
		}, "it is owned by uid 4242, neither root nor the invoking user (uid 0)"),
		Entry("writable by group", func(name string) {
			Expect(os.Chmod(name, 0o664)).To(Succeed())
		}, "it is writable by group or others (mode 0664)"),
		Entry("writable by others", func(name string) {
			Expect(os.Chmod(name, 0o646)).To(Succeed())
		}, "it is writable by group or others (mode 0646)"),
		Entry("a symbolic link, even to a root-owned file", func(name string) {
			real := filepath.Join(dir, "real"+name)
			Expect(os.Rename(name, real)).To(Succeed())
			Expect(os.Symlink(real, name)).To(Succeed())
		}, "it is a symbolic link"),
		Entry("not a regular file", func(name string) {
			Expect(os.Remove(name)).To(Succeed())
			Expect(os.Mkdir(name, 0o755)).To(Succeed())
		}, "it is not a regular file"),
	)

	It("still reads a file named with --hiera as given (the operator chose it)", func() {
		named := filepath.Join(dir, "named.yaml")
		Expect(os.WriteFile(named, []byte("data: {motd: named}\n"), 0o644)).To(Succeed())
		Expect(os.Chown(named, other, other)).To(Succeed())
		code, _, errOut := agent("ensure", "--hiera", named, "file", out, "--content", "{{ lookup('data.motd') }}")
		Expect(errOut).To(BeEmpty())
		Expect(code).To(Equal(0))
		Expect(os.ReadFile(out)).To(Equal([]byte("named")))
	})
})
