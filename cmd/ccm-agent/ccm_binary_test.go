package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"

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
		bin, err = gexec.Build("github.com/ccm-fleet/ccm/cmd/ccm-agent")
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(gexec.CleanupBuildArtifacts)
	})

	// run runs the binary in dir with stdin and returns its exit status,
	// stdout and stderr.
	run := func(dir, stdin string, args ...string) (int, string, string) {
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
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
})
