package scaffoldchoria_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/providers/scaffoldchoria"
	"github.com/ccm-fleet/ccm/resources/scaffoldtype"
)

var _ = Describe("Provider purge and post", func() {
	var (
		ctx    context.Context
		prov   *scaffoldchoria.Provider
		source string
		target string
	)

	BeforeEach(func() {
		ctx = context.Background()
		prov = scaffoldchoria.New(nil)
		source = filepath.Join(GinkgoT().TempDir(), "src")
		target = filepath.Join(GinkgoT().TempDir(), "app")
		writeTree(source, map[string]string{"app.conf": "host=[[ facts.hostname ]]\n", "sub/b.conf": "b"})
		writeTree(target, map[string]string{"app.conf": "host=web01\n", "stray.txt": "not ours", "old/x.conf": "old"})
	})

	DescribeTable("classifies and purges files in the target",
		func(purge, noop, wantStrayKept bool) {
			props := newProps(target, source, scaffoldtype.EngineJet, func(p *scaffoldtype.Properties) { p.Purge = purge })

			st, err := prov.Scaffold(ctx, testEnv(), props, noop)
			Expect(err).NotTo(HaveOccurred())
			Expect(st.Metadata.Stable).To(Equal([]string{filepath.Join(target, "app.conf")}))
			Expect(st.Metadata.Changed).To(Equal([]string{filepath.Join(target, "sub", "b.conf")}))
			Expect(st.Metadata.Purged).To(ConsistOf(filepath.Join(target, "old", "x.conf"), filepath.Join(target, "stray.txt")))
			if wantStrayKept {
				Expect(readFile(filepath.Join(target, "stray.txt"))).To(Equal("not ours"))
				Expect(readFile(filepath.Join(target, "old", "x.conf"))).To(Equal("old"))
			} else {
				Expect(filepath.Join(target, "stray.txt")).NotTo(BeAnExistingFile())
				Expect(filepath.Join(target, "old", "x.conf")).NotTo(BeAnExistingFile())
			}
		},
		Entry("purge off: extra files are tracked and kept", false, false, true),
		Entry("purge on: extra files are deleted", true, false, false),
		Entry("purge on under noop: extra files are only reported", true, true, true),
	)

	It("reports no purged files once purge has run", func() {
		props := newProps(target, source, scaffoldtype.EngineJet, func(p *scaffoldtype.Properties) { p.Purge = true })
		_, err := prov.Scaffold(ctx, testEnv(), props, false)
		Expect(err).NotTo(HaveOccurred())

		st, err := prov.Status(ctx, testEnv(), props)
		Expect(err).NotTo(HaveOccurred())
		Expect(st.Metadata.Purged).To(BeEmpty())
		Expect(st.Metadata.Changed).To(BeEmpty())
		Expect(st.Metadata.Stable).To(HaveLen(2))
	})

	It("runs post commands on matching files so scripts become executable", func() {
		writeTree(source, map[string]string{"bin/run.sh": "#!/bin/sh\necho [[ facts.hostname ]]\n"})
		props := newProps(target, source, scaffoldtype.EngineJet, func(p *scaffoldtype.Properties) {
			p.Post = []map[string]string{{"*.sh": "chmod +x {}"}}
		})

		_, err := prov.Scaffold(ctx, testEnv(), props, false)
		Expect(err).NotTo(HaveOccurred())

		script, err := os.Stat(filepath.Join(target, "bin", "run.sh"))
		Expect(err).NotTo(HaveOccurred())
		Expect(script.Mode().Perm() & 0o111).To(Equal(os.FileMode(0o111)))
		other, err := os.Stat(filepath.Join(target, "sub", "b.conf"))
		Expect(err).NotTo(HaveOccurred())
		Expect(other.Mode().Perm() & 0o111).To(BeZero())

		out, err := exec.Command(filepath.Join(target, "bin", "run.sh")).Output()
		Expect(err).NotTo(HaveOccurred())
		Expect(string(out)).To(Equal("web01\n"))
	})

	It("appends the path when the command has no {} and stays stable with content-changing commands", func() {
		writeTree(source, map[string]string{"notes.txt": "hello foo\n"})
		props := newProps(target, source, scaffoldtype.EngineJet, func(p *scaffoldtype.Properties) {
			p.Post = []map[string]string{{"*.txt": "sed -i s/foo/bar/"}}
		})

		_, err := prov.Scaffold(ctx, testEnv(), props, false)
		Expect(err).NotTo(HaveOccurred())
		Expect(readFile(filepath.Join(target, "notes.txt"))).To(Equal("hello bar\n"))
		// stray.txt matches *.txt but is not rendered: post never touches it.
		Expect(readFile(filepath.Join(target, "stray.txt"))).To(Equal("not ours"))

		st, err := prov.Status(ctx, testEnv(), props)
		Expect(err).NotTo(HaveOccurred())
		Expect(st.Metadata.Changed).To(BeEmpty())
		Expect(st.Metadata.Stable).To(ContainElement(filepath.Join(target, "notes.txt")))
	})

	It("runs post commands under noop only on temporary copies", func() {
		marker := filepath.Join(GinkgoT().TempDir(), "seen")
		props := newProps(target, source, scaffoldtype.EngineJet, func(p *scaffoldtype.Properties) {
			p.Post = []map[string]string{{"b.conf": "cp {} " + marker}}
		})

		_, err := prov.Status(ctx, testEnv(), props)
		Expect(err).NotTo(HaveOccurred())
		Expect(readFile(marker)).To(Equal("b"))
		Expect(filepath.Join(target, "sub")).NotTo(BeADirectory())
	})

	It("fails the render when a post command fails and leaves the target alone", func() {
		props := newProps(target, source, scaffoldtype.EngineJet, func(p *scaffoldtype.Properties) {
			p.Post = []map[string]string{{"*.conf": "false"}}
		})

		_, err := prov.Scaffold(ctx, testEnv(), props, false)
		Expect(err).To(MatchError(ContainSubstring("failed to post process")))
		Expect(filepath.Join(target, "sub")).NotTo(BeADirectory())
	})

	It("kills a post command that runs past the time left on ctx", func() {
		_, err := exec.LookPath("timeout")
		Expect(err).NotTo(HaveOccurred(), "coreutils timeout(1) is needed to bound post commands")
		props := newProps(target, source, scaffoldtype.EngineJet, func(p *scaffoldtype.Properties) {
			p.Post = []map[string]string{{"b.conf": "sh -c 'sleep 600' {}"}}
		})
		tctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()

		_, err = prov.Scaffold(tctx, testEnv(), props, false)
		Expect(err).To(MatchError(ContainSubstring("exit status 124")))
		Expect(err).To(MatchError(ContainSubstring("ran past its time limit")))
		Expect(filepath.Join(target, "sub")).NotTo(BeADirectory())
	})

	It("bounds the error text of a noisy failing post command", func() {
		props := newProps(target, source, scaffoldtype.EngineJet, func(p *scaffoldtype.Properties) {
			p.Post = []map[string]string{{"b.conf": "sh -c 'head -c 100000 /dev/zero | tr \"\\0\" x; exit 3' --"}}
		})

		_, err := prov.Scaffold(ctx, testEnv(), props, false)
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring("(truncated)"))
		Expect(len(err.Error())).To(BeNumerically("<", scaffoldchoria.MaxErrorBytes+200))
	})
})
