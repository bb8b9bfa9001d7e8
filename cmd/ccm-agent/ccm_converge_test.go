package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	"github.com/onsi/gomega/gexec"
)

// One manifest that uses CCM's hierarchy (merge: deep; env, role and host
// levels chosen by facts given on the command line), ${ } expressions with
// Facts, Data and lookup(), and an apply resource with a child manifest,
// run with the built ccm-agent binary. The expected files in
// testdata/ccm-converge/expected are the ones CCM itself wrote for the same
// manifest and command line (see PROVENANCE.md there).
var _ = Describe("ccm-agent apply converges as CCM does", Ordered, func() {
	var bin string
	BeforeAll(func() {
		var err error
		bin, err = gexec.Build("github.com/ccm-fleet/ccm/cmd/ccm-agent")
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(gexec.CleanupBuildArtifacts)
	})

	run := func(out string) *gexec.Session {
		site, err := filepath.Abs(filepath.Join("testdata", "ccm-converge", "site.yaml"))
		Expect(err).ToNot(HaveOccurred())
		cmd := exec.Command(bin, "apply", site, "--fact", "env=prod", "--fact", "role=web", "--fact", "node=web01", "--fact", "out="+out)
		cmd.Dir = GinkgoT().TempDir()
		s, err := gexec.Start(cmd, GinkgoWriter, GinkgoWriter)
		Expect(err).ToNot(HaveOccurred())
		Eventually(s).WithTimeout(60 * time.Second).Should(gexec.Exit(0))
		return s
	}

	It("writes exactly the files CCM writes, with CCM's contents and modes, and is stable on the next run", func() {
		if os.Geteuid() != 0 {
			Skip("the manifest sets owner root, as the CCM run that made the expected files did")
		}
		out := GinkgoT().TempDir()
		s := run(out)
		Expect(s.Out).To(gbytes.Say(`4 resources: 0 stable, 4 changed, 0 failed`))

		expected := filepath.Join("testdata", "ccm-converge", "expected")
		want, err := os.ReadDir(expected)
		Expect(err).ToNot(HaveOccurred())
		got, err := os.ReadDir(out)
		Expect(err).ToNot(HaveOccurred())
		names := func(es []os.DirEntry) []string {
			var n []string
			for _, e := range es {
				n = append(n, e.Name())
			}
			return n
		}
		Expect(names(got)).To(Equal(names(want)))
		Expect(names(got)).To(Equal([]string{"app.conf", "child.conf", "motd"}))

		modes := map[string]os.FileMode{"app.conf": 0o640, "child.conf": 0o644, "motd": 0o644}
		for _, e := range want {
			w, err := os.ReadFile(filepath.Join(expected, e.Name()))
			Expect(err).ToNot(HaveOccurred())
			p := filepath.Join(out, e.Name())
			Expect(os.ReadFile(p)).To(Equal(w), e.Name())
			fi, err := os.Stat(p)
			Expect(err).ToNot(HaveOccurred())
			Expect(fi.Mode().Perm()).To(Equal(modes[e.Name()]), e.Name())
			st := fi.Sys().(*syscall.Stat_t)
			Expect(st.Uid).To(BeZero(), e.Name())
			Expect(st.Gid).To(BeZero(), e.Name())
		}
		// The values the hierarchy chose, said once more in plain words.
		Expect(os.ReadFile(filepath.Join(out, "motd"))).To(Equal([]byte("prod-hello from web01 (prod/web)\nlines=base,web\n")))

		s = run(out)
		Expect(s.Out).To(gbytes.Say(`4 resources: 4 stable, 0 changed, 0 failed`))
	})
})
