package scaffoldchoria_test

import (
	"context"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/providers/scaffoldchoria"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/scaffoldtype"
)

var _ = Describe("Provider status for ensure absent and Remove", func() {
	var (
		ctx    context.Context
		prov   *scaffoldchoria.Provider
		source string
		target string
		props  *scaffoldtype.Properties
	)

	BeforeEach(func() {
		ctx = context.Background()
		prov = scaffoldchoria.New(nil)
		source = filepath.Join(GinkgoT().TempDir(), "src")
		target = filepath.Join(GinkgoT().TempDir(), "app")
		writeTree(source, map[string]string{
			"top.conf":          "top [[ facts.hostname ]]",
			"a/b/deep.conf":     "deep",
			"a/b/c/deeper.conf": "deeper",
			"keep/mine.conf":    "mine",
		})
		props = newProps(target, source, scaffoldtype.EngineJet, func(p *scaffoldtype.Properties) { p.Ensure = "absent" })
	})

	It("returns empty metadata without rendering when the target does not exist", func() {
		props.Source = filepath.Join(source, "does-not-exist")
		st, err := prov.Status(ctx, testEnv(), props)
		Expect(err).NotTo(HaveOccurred())
		Expect(st.Ensure).To(Equal("absent"))
		Expect(st.Metadata.TargetExists).To(BeFalse())
		Expect(st.Metadata.Changed).To(BeEmpty())
		Expect(st.Metadata.Stable).To(BeEmpty())
		Expect(st.Metadata.Purged).To(BeEmpty())
		Expect(st.Metadata.Name).To(Equal(target))
	})

	It("lists only managed files that exist on disk", func() {
		writeTree(target, map[string]string{
			"top.conf":      "top web01", // stable
			"a/b/deep.conf": "edited",    // would be updated
			"other.txt":     "not ours",  // purged
		})
		st, err := prov.Status(ctx, testEnv(), props)
		Expect(err).NotTo(HaveOccurred())
		Expect(st.Ensure).To(Equal("present"))
		Expect(st.Metadata.Stable).To(Equal([]string{filepath.Join(target, "top.conf")}))
		Expect(st.Metadata.Changed).To(Equal([]string{filepath.Join(target, "a", "b", "deep.conf")}))
		Expect(st.Metadata.Purged).To(Equal([]string{filepath.Join(target, "other.txt")}))
	})

	It("removes managed files and empty directories deepest first and keeps unrelated files and the target", func() {
		_, err := prov.Scaffold(ctx, testEnv(), props, false)
		Expect(err).NotTo(HaveOccurred())
		writeTree(target, map[string]string{"keep/unrelated.txt": "someone else's", "a/b/c/deeper.conf": "edited"})

		st, err := prov.Status(ctx, testEnv(), props)
		Expect(err).NotTo(HaveOccurred())
		Expect(prov.Remove(ctx, props, st)).To(Succeed())

		Expect(filepath.Join(target, "top.conf")).NotTo(BeAnExistingFile())
		Expect(filepath.Join(target, "a")).NotTo(BeADirectory())
		Expect(filepath.Join(target, "keep", "mine.conf")).NotTo(BeAnExistingFile())
		Expect(readFile(filepath.Join(target, "keep", "unrelated.txt"))).To(Equal("someone else's"))
		Expect(target).To(BeADirectory())

		after, err := prov.Status(ctx, testEnv(), props)
		Expect(err).NotTo(HaveOccurred())
		Expect(after.Metadata.Changed).To(BeEmpty())
		Expect(after.Metadata.Stable).To(BeEmpty())
		Expect(after.Metadata.Purged).To(Equal([]string{filepath.Join(target, "keep", "unrelated.txt")}))
	})

	It("removes the target when only managed files were in it", func() {
		_, err := prov.Scaffold(ctx, testEnv(), props, false)
		Expect(err).NotTo(HaveOccurred())
		st, err := prov.Status(ctx, testEnv(), props)
		Expect(err).NotTo(HaveOccurred())
		Expect(st.Metadata.Stable).To(HaveLen(4))

		Expect(prov.Remove(ctx, props, st)).To(Succeed())
		Expect(target).NotTo(BeAnExistingFile())
		Expect(filepath.Dir(target)).To(BeADirectory())
	})

	It("skips files that are already gone", func() {
		st := &protocol.ScaffoldState{Metadata: &protocol.ScaffoldMetadata{
			Changed: []string{filepath.Join(target, "gone.conf")},
			Stable:  []string{filepath.Join(target, "x", "also-gone.conf")},
		}}
		writeTree(target, map[string]string{"x/kept.txt": "k"})
		Expect(prov.Remove(ctx, props, st)).To(Succeed())
		Expect(readFile(filepath.Join(target, "x", "kept.txt"))).To(Equal("k"))
	})

	DescribeTable("refuses paths it must not remove, before removing anything",
		func(bad func(target string) string, want string) {
			writeTree(target, map[string]string{"ok.conf": "ok"})
			st := &protocol.ScaffoldState{Metadata: &protocol.ScaffoldMetadata{
				Changed: []string{filepath.Join(target, "ok.conf")},
				Stable:  []string{bad(target)},
			}}
			err := prov.Remove(ctx, props, st)
			Expect(err).To(MatchError(ContainSubstring(want)))
			Expect(readFile(filepath.Join(target, "ok.conf"))).To(Equal("ok"))
		},
		Entry("a relative path", func(string) string { return "ok.conf" }, "not an absolute path"),
		Entry("a path outside the target", func(t string) string { return filepath.Join(filepath.Dir(t), "elsewhere.conf") }, "not inside the target"),
		Entry("a path escaping with ..", func(t string) string { return t + "/../elsewhere.conf" }, "not inside the target"),
		Entry("the target itself", func(t string) string { return t }, "not inside the target"),
	)
})

var _ = Describe("Factory", func() {
	It("is the always manageable choria provider of scaffold with priority 1", func() {
		f := scaffoldchoria.NewFactory(nil)
		Expect(f.Type()).To(Equal("scaffold"))
		Expect(f.Name()).To(Equal("choria"))

		ok, prio, err := f.IsManageable(map[string]any{}, &scaffoldtype.Properties{})
		Expect(err).NotTo(HaveOccurred())
		Expect(ok).To(BeTrue())
		Expect(prio).To(Equal(1))

		p, err := f.New()
		Expect(err).NotTo(HaveOccurred())
		Expect(p.Name()).To(Equal("choria"))
		Expect(p).To(BeAssignableToTypeOf(&scaffoldchoria.Provider{}))
		var _ scaffoldtype.Provider = p.(*scaffoldchoria.Provider)
	})

	It("is selected by a registry holding the scaffold type", func() {
		reg := resources.NewRegistry()
		Expect(reg.RegisterType(scaffoldtype.Type{})).To(Succeed())
		Expect(reg.RegisterProvider(scaffoldchoria.NewFactory(nil))).To(Succeed())
		f, err := reg.Select("scaffold", "", map[string]any{}, &scaffoldtype.Properties{})
		Expect(err).NotTo(HaveOccurred())
		Expect(f.Name()).To(Equal("choria"))
	})
})
