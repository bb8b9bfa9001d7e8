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

// CCM's CLI page (docs/content/cli/_index.md, "Data in the CLI"): commands
// read ./.hiera and ./.env automatically; --hiera or CCM_HIERA_DATA name
// another data file.
var _ = Describe("ccm-agent ensure data from ./.hiera and ./.env", func() {
	var dir string
	BeforeEach(func() {
		dir = GinkgoT().TempDir()
		GinkgoT().Chdir(dir)
		Expect(os.WriteFile(filepath.Join(dir, ".hiera"), []byte(`
hierarchy:
  order: ["role:{{ lookup('facts.role', 'none') }}"]
data:
  motd: plain
overrides:
  role:web:
    motd: web-canary-7d1
`), 0o644)).To(Succeed())
	})

	It("resolves ./.hiera with the host's facts for data.* in templates", func() {
		f := filepath.Join(dir, "motd")
		code, _, errOut := agent("ensure", "file", f, "--content", "{{ lookup('data.motd') }}", "--fact", "role=web")
		Expect(errOut).To(BeEmpty())
		Expect(code).To(Equal(0))
		Expect(os.ReadFile(f)).To(Equal([]byte("web-canary-7d1")))

		code, _, _ = agent("ensure", "file", f, "--content", "{{ lookup('data.motd') }}", "--fact", "role=db")
		Expect(code).To(Equal(0))
		Expect(os.ReadFile(f)).To(Equal([]byte("plain")))
	})

	It("reads another file with --hiera, and runs without data when the default file is absent", func() {
		other := filepath.Join(dir, "other.yaml")
		Expect(os.WriteFile(other, []byte("data: {motd: other}\n"), 0o644)).To(Succeed())
		f := filepath.Join(dir, "motd")
		code, _, _ := agent("ensure", "--hiera", other, "file", f, "--content", "{{ lookup('data.motd') }}")
		Expect(code).To(Equal(0))
		Expect(os.ReadFile(f)).To(Equal([]byte("other")))

		Expect(os.Remove(filepath.Join(dir, ".hiera"))).To(Succeed())
		code, _, errOut := agent("ensure", "file", f, "--content", "{{ lookup('data.motd', 'none') }}")
		Expect(errOut).To(BeEmpty())
		Expect(code).To(Equal(0))
		Expect(os.ReadFile(f)).To(Equal([]byte("none")))
	})

	It("adds ./.env to the environment templates see, unless --no-read-env", func() {
		Expect(os.WriteFile(filepath.Join(dir, ".env"), []byte("CCM_DOTENV_CANARY=\"from-dotenv\"\n"), 0o644)).To(Succeed())
		f := filepath.Join(dir, "env")
		code, _, errOut := agent("ensure", "file", f, "--content", "{{ lookup('environ.CCM_DOTENV_CANARY', 'unset') }}")
		Expect(errOut).To(BeEmpty())
		Expect(code).To(Equal(0))
		Expect(os.ReadFile(f)).To(Equal([]byte("from-dotenv")))

		code, _, _ = agent("ensure", "--no-read-env", "file", f, "--content", "{{ lookup('environ.CCM_DOTENV_CANARY', 'unset') }}")
		Expect(code).To(Equal(0))
		Expect(os.ReadFile(f)).To(Equal([]byte("unset")))
	})
})

// CCM's apply takes --hiera FILE (or CCM_HIERA_DATA) as overriding data
// (docs/content/cli/_index.md, "Data in the CLI").
var _ = Describe("ccm-agent apply --hiera", func() {
	It("resolves the file with the facts and lays its data over the manifest's, --data over both", func() {
		dir := GinkgoT().TempDir()
		site := filepath.Join(dir, "site.yaml")
		out := filepath.Join(dir, "out")
		Expect(os.WriteFile(site, []byte(`
data: {greeting: manifest, who: manifest}
ccm:
  resources:
    - file:
        - `+out+`: {content: "{{ lookup('data.greeting') }} {{ lookup('data.who') }}", owner: root, group: root, mode: "0644"}
`), 0o644)).To(Succeed())
		hiera := filepath.Join(dir, "hiera.yaml")
		Expect(os.WriteFile(hiera, []byte(`
hierarchy:
  order: ["role:{{ lookup('facts.role', 'none') }}"]
data: {greeting: hiera-base}
overrides:
  role:web: {greeting: hiera-web}
`), 0o644)).To(Succeed())
		code, _, errOut := agent("apply", site, "--hiera", hiera, "--fact", "role=web")
		Expect(errOut).To(BeEmpty())
		Expect(code).To(Equal(0))
		Expect(os.ReadFile(out)).To(Equal([]byte("hiera-web manifest")))

		data := filepath.Join(dir, "data.yaml")
		Expect(os.WriteFile(data, []byte("greeting: from-data\n"), 0o644)).To(Succeed())
		code, _, _ = agent("apply", site, "--hiera", hiera, "--data", data)
		Expect(code).To(Equal(0))
		Expect(os.ReadFile(out)).To(Equal([]byte("from-data manifest")))
	})
})

var _ = Describe("ccm-agent ensure --help", func() {
	// CCM's cmd/ensure_exec.go, ensure_archive.go: --exec-if,
	// --exec-unless, --environment, --refresh-only and --extract are
	// CCM's own flag names, so help shows them.
	DescribeTable("shows CCM's flag names in help",
		func(typ string, want ...string) {
			code, out, errOut := agent("ensure", typ, "--help")
			Expect(code).To(Equal(0), errOut)
			for _, w := range want {
				Expect(out).To(ContainSubstring(w))
			}
		},
		Entry("exec", "exec", "--exec-if=ONLYIF", "--exec-unless=UNLESS", "--environment=ENVIRONMENT", "--[no-]refresh-only", "--onlyif=ONLYIF", "CCM's name for --onlyif"),
		Entry("archive", "archive", "--extract=EXTRACT_PARENT", "--extract-parent=EXTRACT_PARENT"),
	)
})
