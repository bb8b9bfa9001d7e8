package scaffoldtype_test

import (
	"context"
	"encoding/json"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/providers/scaffoldchoria"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/scaffoldtype"
	"github.com/ccm-fleet/ccm/resources/templates"
)

var _ = Describe("scaffold diffs with the choria provider", func() {
	var (
		workDir, target string
		prov            resources.Provider
	)
	BeforeEach(func() {
		workDir = GinkgoT().TempDir()
		target = filepath.Join(GinkgoT().TempDir(), "app")
		var err error
		prov, err = scaffoldchoria.NewFactory(nil).New()
		Expect(err).NotTo(HaveOccurred())
	})
	apply := func(p scaffoldtype.Properties, noop bool) *resources.Outcome {
		GinkgoHelper()
		p.Name = target
		Expect(p.Validate()).To(Succeed())
		out, err := scaffoldtype.Type{}.Apply(context.Background(), &resources.ApplyContext{
			Noop: noop, WorkingDir: workDir, Env: templates.New(nil, map[string]any{"port": 8080}),
		}, &p, prov)
		Expect(err).NotTo(HaveOccurred())
		return out
	}

	It("lists added and purged files and diffs each updated one, in JSON too", func() {
		write(filepath.Join(workDir, "t", "keep.conf"), "port=[[ data.port ]]\nmode=fast\n")
		write(filepath.Join(workDir, "t", "new.conf"), "new\n")
		write(filepath.Join(target, "keep.conf"), "port=80\nmode=fast\n")
		write(filepath.Join(target, "stray.conf"), "stray\n")

		out := apply(scaffoldtype.Properties{Source: "t", Purge: true}, true)
		Expect(out.Changed).To(BeTrue())
		d := out.Diff
		Expect(d.Added).To(Equal([]string{filepath.Join(target, "new.conf")}))
		Expect(d.Purged).To(Equal([]string{filepath.Join(target, "stray.conf")}))
		Expect(d.Files).To(HaveLen(1))
		keep := filepath.Join(target, "keep.conf")
		Expect(d.Files[0].Path).To(Equal(keep))
		Expect(d.Files[0].Content).To(Equal("--- " + keep + " (current)\n+++ " + keep + " (desired)\n@@ -1,2 +1,2 @@\n-port=80\n+port=8080\n mode=fast\n"))
		Expect(read(keep)).To(Equal("port=80\nmode=fast\n"))

		raw, err := json.Marshal(d)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(raw)).To(ContainSubstring(`"added":["` + filepath.Join(target, "new.conf") + `"]`))
		Expect(string(raw)).To(ContainSubstring(`"purged":["` + filepath.Join(target, "stray.conf") + `"]`))
		Expect(string(raw)).To(ContainSubstring(`"files":[{"path":"` + keep + `","content":"--- `))

		// A real apply reports the same diff, taken before it wrote.
		out = apply(scaffoldtype.Properties{Source: "t", Purge: true}, false)
		Expect(out.Diff.Files).To(HaveLen(1))
		Expect(out.Diff.Files[0].Content).To(ContainSubstring("-port=80\n+port=8080\n"))
		Expect(read(keep)).To(Equal("port=8080\nmode=fast\n"))
	})

	It("keeps file names but no content for a sensitive scaffold", func() {
		write(filepath.Join(workDir, "t", "secret.conf"), "token=CANARY-new\n")
		write(filepath.Join(target, "secret.conf"), "token=CANARY-old\n")
		p := scaffoldtype.Properties{Source: "t"}
		p.Sensitive = true
		out := apply(p, true)
		Expect(out.Diff.Files).To(Equal([]protocol.FileDiff{{Path: filepath.Join(target, "secret.conf"), Summary: protocol.DiffSensitive}}))
	})

	It("lists the files ensure absent would remove", func() {
		write(filepath.Join(workDir, "t", "a.conf"), "a\n")
		write(filepath.Join(target, "a.conf"), "a\n")
		p := scaffoldtype.Properties{Source: "t"}
		p.Ensure = scaffoldtype.EnsureAbsent
		out := apply(p, true)
		Expect(out.Diff.Purged).To(Equal([]string{filepath.Join(target, "a.conf")}))
	})
})
