package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"
)

// These specs run the built ccm-agent binary on inputs that real CCM (built
// from github.com/choria-io/ccm) was run on side by side, and hold it to
// what CCM did: exit status, what it printed, and the files it wrote.
var _ = Describe("the ccm-agent binary, side by side with CCM", Ordered, func() {
	var bin string
	BeforeAll(func() {
		var err error
		built, err := gexec.Build("github.com/ccm-fleet/ccm/cmd/ccm-agent")
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(gexec.CleanupBuildArtifacts)
		// A copy another user may run: gexec's directory is private.
		shared, err := os.MkdirTemp("", "ccm-binary-")
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(os.RemoveAll, shared)
		Expect(os.Chmod(shared, 0o755)).To(Succeed())
		b, err := os.ReadFile(built)
		Expect(err).ToNot(HaveOccurred())
		bin = filepath.Join(shared, "ccm-agent")
		Expect(os.WriteFile(bin, b, 0o755)).To(Succeed())
	})

	// runAs runs the binary in dir with stdin, as cred when it is not nil,
	// and returns its exit status, stdout and stderr.
	runAs := func(cred *syscall.Credential, dir, stdin string, args ...string) (int, string, string) {
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		if cred != nil {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		}
		cmd.Stdin = strings.NewReader(stdin)
		var out, errOut strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		if err != nil {
			var ee *exec.ExitError
			Expect(err).To(BeAssignableToTypeOf(ee), "the binary ran")
		}
		return cmd.ProcessState.ExitCode(), out.String(), errOut.String()
	}
	run := func(dir, stdin string, args ...string) (int, string, string) {
		return runAs(nil, dir, stdin, args...)
	}

	Describe("force with an ensure other than absent (CCM: 'force: true' is only valid with 'ensure: absent')", func() {
		It("refuses a manifest holding it and writes none of its files", func() {
			dir := GinkgoT().TempDir()
			first, second := filepath.Join(dir, "first"), filepath.Join(dir, "second")
			manifest := "ccm:\n  resources:\n    - file:\n" +
				"        - " + first + ":\n            content: \"a\\n\"\n            owner: root\n            group: root\n            mode: \"0644\"\n" +
				"        - " + second + ":\n            ensure: present\n            content: \"b\\n\"\n            owner: root\n            group: root\n            mode: \"0644\"\n            force: true\n"
			Expect(os.WriteFile(filepath.Join(dir, "manifest.yaml"), []byte(manifest), 0o644)).To(Succeed())
			code, out, errOut := run(dir, "", "apply", "manifest.yaml")
			Expect(code).To(Equal(1))
			Expect(out).To(BeEmpty())
			Expect(errOut).To(Equal("ccm-agent: resources[0] file#" + second + ": invalid resource: property force: true is only valid with ensure absent, not present\n"))
			Expect(first).ToNot(BeAnExistingFile())
			Expect(second).ToNot(BeAnExistingFile())
		})

		It("refuses ensure file --force with present and directory, writing nothing", func() {
			dir := GinkgoT().TempDir()
			f := filepath.Join(dir, "f")
			code, _, errOut := run(dir, "", "ensure", "file", f, "--content", "hi", "--force")
			Expect(code).To(Equal(1))
			Expect(errOut).To(Equal("ccm-agent: file#" + f + ": invalid resource: property force: true is only valid with ensure absent, not present\n"))
			code, _, errOut = run(dir, "", "ensure", "file", f, "directory", "--force")
			Expect(code).To(Equal(1))
			Expect(errOut).To(ContainSubstring("property force: true is only valid with ensure absent, not directory"))
			Expect(f).ToNot(BeAnExistingFile())
			Expect(f).ToNot(BeADirectory())
		})

		It("answers an ensure api pipe request holding it with the error, status 0 as CCM, and writes nothing", func() {
			dir := GinkgoT().TempDir()
			f := filepath.Join(dir, "f")
			req := `{"protocol":"io.choria.ccm.v1.resource.ensure.request","type":"file","properties":{"name":"` + f +
				`","ensure":"present","content":"x","owner":"root","group":"root","mode":"0644","force":true}}`
			code, out, _ := run(dir, req, "ensure", "api", "pipe")
			Expect(code).To(Equal(0))
			Expect(out).To(ContainSubstring(`"error": "file#` + f + `: invalid resource: property force: true is only valid with ensure absent, not present"`))
			Expect(f).ToNot(BeAnExistingFile())
		})
	})

	Describe("ensure archive FILE URL", func() {
		var url string
		BeforeAll(func() {
			var buf bytes.Buffer
			zw := gzip.NewWriter(&buf)
			tw := tar.NewWriter(zw)
			Expect(tw.WriteHeader(&tar.Header{Name: "a.txt", Mode: 0o644, Size: 6, Typeflag: tar.TypeReg})).To(Succeed())
			_, err := tw.Write([]byte("hello\n"))
			Expect(err).ToNot(HaveOccurred())
			Expect(tw.Close()).To(Succeed())
			Expect(zw.Close()).To(Succeed())
			body := buf.Bytes()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(body) }))
			DeferCleanup(srv.Close)
			url = srv.URL + "/app.tar.gz"
		})

		// The user the binary runs as: nobody when the specs run as root,
		// so that the owner cannot be root by accident; else the spec's own.
		runner := func() (*syscall.Credential, uint32, uint32) {
			if os.Geteuid() != 0 {
				return nil, uint32(os.Getuid()), uint32(os.Getgid())
			}
			u, err := user.Lookup("nobody")
			Expect(err).ToNot(HaveOccurred())
			uid, err := strconv.ParseUint(u.Uid, 10, 32)
			Expect(err).ToNot(HaveOccurred())
			gid, err := strconv.ParseUint(u.Gid, 10, 32)
			Expect(err).ToNot(HaveOccurred())
			return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, uint32(uid), uint32(gid)
		}

		It("without --owner is owned by the user and group running it, as CCM's, and written 0600, as CCM writes it", func() {
			cred, uid, gid := runner()
			dir, err := os.MkdirTemp(filepath.Dir(bin), "archive-")
			Expect(err).ToNot(HaveOccurred())
			Expect(os.Chown(dir, int(uid), int(gid))).To(Succeed())
			var fi os.FileInfo
			f := filepath.Join(dir, "app.tar.gz")
			code, out, errOut := runAs(cred, dir, "", "ensure", "archive", f, url)
			Expect(errOut).To(BeEmpty())
			Expect(code).To(Equal(0))
			Expect(out).To(ContainSubstring("archive#" + f + " changed"))
			fi, err = os.Stat(f)
			Expect(err).ToNot(HaveOccurred())
			Expect(fi.Mode().Perm()).To(Equal(os.FileMode(0o600)))
			st := fi.Sys().(*syscall.Stat_t)
			Expect(st.Uid).To(Equal(uid))
			Expect(st.Gid).To(Equal(gid))

			code, out, _ = runAs(cred, dir, "", "ensure", "archive", f, url)
			Expect(code).To(Equal(0))
			Expect(out).To(ContainSubstring("archive#" + f + " stable"))
		})
	})

	Describe("status package NAME of a package that is not installed", func() {
		// CCM (with its apt provider) printed this and exited 0, for a
		// name apt does not know as for one it knows but has not installed.
		DescribeTable("prints version: absent and exits 0, as CCM does",
			func(name string) {
				dir := GinkgoT().TempDir()
				code, out, errOut := run(dir, "", "status", "package", name)
				Expect(errOut).To(BeEmpty())
				Expect(code).To(Equal(0))
				Expect(out).To(Equal("name: " + name + "\nversion: absent\nprovider: apt\nextended:\n  status: unknown\n\n"))

				code, out, errOut = run(dir, "", "status", "package", name, "--json")
				Expect(errOut).To(BeEmpty())
				Expect(code).To(Equal(0))
				Expect(out).To(Equal("{\n  \"name\": \"" + name + "\",\n  \"version\": \"absent\",\n  \"provider\": \"apt\",\n  \"extended\": {\n    \"status\": \"unknown\"\n  }\n}\n"))
			},
			Entry("a name no repository has", "ccm-fleet-no-such-package"),
			Entry("a package apt knows, not installed", "hello"),
		)
	})

	Describe("noop messages (CCM's sentences, found by running CCM on the same files with --noop)", func() {
		It("says CCM's sentence for a file with content whose mode only differs, and for a directory whose mode differs", func() {
			dir := GinkgoT().TempDir()
			f, d := filepath.Join(dir, "f"), filepath.Join(dir, "d")
			Expect(os.WriteFile(f, []byte("same\n"), 0o600)).To(Succeed())
			Expect(os.Chmod(f, 0o600)).To(Succeed())
			Expect(os.Mkdir(d, 0o700)).To(Succeed())
			Expect(os.Chmod(d, 0o700)).To(Succeed())

			code, out, errOut := run(dir, "", "ensure", "--noop", "file", f, "--content", "same\n", "--owner", "root:root", "--mode", "0644")
			Expect(errOut).To(BeEmpty())
			Expect(code).To(Equal(5))
			Expect(out).To(Equal("file#" + f + " would change: Would have created the file: mode 0600 should be 0644\n"))

			code, out, errOut = run(dir, "", "ensure", "--noop", "file", d, "directory", "--owner", "root:root", "--mode", "0755")
			Expect(errOut).To(BeEmpty())
			Expect(code).To(Equal(5))
			Expect(out).To(Equal("file#" + d + " would change: Would have created directory: mode 0700 should be 0755\n"))

			fi, err := os.Stat(f)
			Expect(err).ToNot(HaveOccurred())
			Expect(fi.Mode().Perm()).To(Equal(os.FileMode(0o600)), "noop changed nothing")
		})

		It("says CCM's sentence for a package to install with ensure present", func() {
			// hello is in this machine's apt cache and not installed (the
			// status spec above reads it absent).
			code, out, errOut := run(GinkgoT().TempDir(), "", "ensure", "--noop", "package", "hello")
			Expect(errOut).To(BeEmpty())
			Expect(code).To(Equal(5))
			Expect(out).To(Equal("package#hello would change: Would have installed version present\n"))
		})
	})
})
