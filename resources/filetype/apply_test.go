package filetype_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/filetype"
)

// fakeProps returns valid properties for /srv/f.
func fakeProps(ensure string, content *string) *filetype.Properties {
	p := &filetype.Properties{Content: content, Owner: "root", Group: "root", Mode: "0644"}
	p.Name, p.Ensure = "/srv/f", ensure
	return p
}

var _ = Describe("Type", func() {
	var (
		ctx context.Context
		ac  *resources.ApplyContext
		ft  filetype.Type
	)

	BeforeEach(func() {
		ctx = context.Background()
		ac = &resources.ApplyContext{}
	})

	It("is the file type", func() {
		Expect(ft.Name()).To(Equal("file"))
		Expect(ft.NewProperties()).To(BeAssignableToTypeOf(&filetype.Properties{}))
	})

	Describe("Apply with a fake provider", func() {
		It("does nothing when the file is in its desired state", func() {
			fp := &fakeProvider{states: []*protocol.FileState{found("present", filetype.ChecksumBytes([]byte("hi")), "root", "root", "0644")}}
			out, err := ft.Apply(ctx, ac, fakeProps("present", ptr("hi")), fp)
			Expect(err).ToNot(HaveOccurred())
			Expect(out.Changed).To(BeFalse())
			Expect(out.NoopMessage).To(BeEmpty())
			Expect(fp.calls).To(Equal([]string{"Status /srv/f"}))
		})

		It("stores and re-checks the state", func() {
			done := found("present", filetype.ChecksumBytes([]byte("hi")), "root", "root", "0644")
			fp := &fakeProvider{states: []*protocol.FileState{stAbsent, done}}
			out, err := ft.Apply(ctx, ac, fakeProps("present", ptr("hi")), fp)
			Expect(err).ToNot(HaveOccurred())
			Expect(out.Changed).To(BeTrue())
			Expect(out.State).To(BeIdenticalTo(done))
			Expect(fp.calls).To(Equal([]string{"Status /srv/f", `Store /srv/f "hi" "" root:root 0644`, "Status /srv/f"}))
		})

		It("fails with ErrDesiredStateFailed when the provider did not reach the state", func() {
			fp := &fakeProvider{states: []*protocol.FileState{stAbsent}}
			out, err := ft.Apply(ctx, ac, fakeProps("present", ptr("hi")), fp)
			Expect(err).To(MatchError(resources.ErrDesiredStateFailed))
			Expect(err).To(MatchError(ContainSubstring("file /srv/f: desired state not achieved: ensure is absent, should be present")))
			Expect(out.Changed).To(BeTrue())
			Expect(out.State).To(BeIdenticalTo(stAbsent))
		})

		It("fails with ErrDesiredStateFailed when attributes did not take", func() {
			fp := &fakeProvider{states: []*protocol.FileState{stFileAttrs}}
			_, err := ft.Apply(ctx, ac, fakeProps("present", nil), fp)
			Expect(err).To(MatchError(resources.ErrDesiredStateFailed))
			Expect(err).To(MatchError(ContainSubstring("owner nobody should be root")))
			Expect(fp.calls).To(ContainElement("SetAttributes /srv/f root:root 0644"))
		})

		It("fails with ErrDesiredStateFailed when a removed file is still there", func() {
			fp := &fakeProvider{states: []*protocol.FileState{stFileMatch}}
			_, err := ft.Apply(ctx, ac, fakeProps("absent", nil), fp)
			Expect(err).To(MatchError(resources.ErrDesiredStateFailed))
			Expect(err).To(MatchError(ContainSubstring("ensure is present, should be absent")))
		})

		It("changes nothing under noop and says it would have created the file", func() {
			fp := &fakeProvider{states: []*protocol.FileState{stAbsent}}
			ac.Noop = true
			out, err := ft.Apply(ctx, ac, fakeProps("present", ptr("hi")), fp)
			Expect(err).ToNot(HaveOccurred())
			Expect(out.Changed).To(BeTrue())
			Expect(out.NoopMessage).To(Equal("Would have created the file"))
			Expect(out.State).To(BeIdenticalTo(stAbsent))
			Expect(fp.calls).To(Equal([]string{"Status /srv/f"}))
		})

		It("refuses a directory where the file should be, naming it, and changes nothing", func() {
			fp := &fakeProvider{states: []*protocol.FileState{stDirMatch}}
			_, err := ft.Apply(ctx, ac, fakeProps("present", ptr("hi")), fp)
			Expect(err).To(MatchError(filetype.ErrDirectoryInTheWay))
			Expect(err.Error()).To(HavePrefix("file /srv/f: is a directory where a file should be"))
			Expect(fp.calls).To(Equal([]string{"Status /srv/f"}))
		})

		It("refuses force with ensure present before asking the provider anything", func() {
			fp := &fakeProvider{states: []*protocol.FileState{stAbsent}}
			p := fakeProps("present", ptr("hi"))
			p.Force = true
			_, err := ft.Apply(ctx, ac, p, fp)
			Expect(err).To(MatchError(resources.ErrInvalid))
			Expect(err).To(MatchError("file /srv/f: invalid resource: property force: true is only valid with ensure absent, not present"))
			Expect(fp.calls).To(BeEmpty())
		})

		It("returns the provider's error, naming the file", func() {
			fp := &fakeProvider{states: []*protocol.FileState{stAbsent}, changeErr: errors.New("disk on fire")}
			out, err := ft.Apply(ctx, ac, fakeProps("present", ptr("hi")), fp)
			Expect(err).To(MatchError("file /srv/f: disk on fire"))
			Expect(out.State).To(BeIdenticalTo(stAbsent))
		})

		It("returns a Status error, naming the file", func() {
			fp := &fakeProvider{statusErr: errors.New("stat broke")}
			_, err := ft.Apply(ctx, ac, fakeProps("present", ptr("hi")), fp)
			Expect(err).To(MatchError("file /srv/f: stat broke"))
		})

		It("refuses a symbolic link, even under noop", func() {
			fp := &fakeProvider{states: []*protocol.FileState{stSymlink}}
			ac.Noop = true
			out, err := ft.Apply(ctx, ac, fakeProps("present", ptr("hi")), fp)
			Expect(err).To(MatchError(filetype.ErrSymlink))
			Expect(out.State).To(BeIdenticalTo(stSymlink))
		})

		It("resolves a relative source against the working directory and compares by checksum", func() {
			wd := GinkgoT().TempDir()
			Expect(os.MkdirAll(filepath.Join(wd, "files"), 0o755)).To(Succeed())
			Expect(os.WriteFile(filepath.Join(wd, "files", "a.conf"), []byte("from source"), 0o644)).To(Succeed())
			done := found("present", filetype.ChecksumBytes([]byte("from source")), "root", "root", "0644")
			fp := &fakeProvider{states: []*protocol.FileState{stFileMatch, done}}
			p := fakeProps("present", nil)
			p.Source = "files/a.conf"
			ac.WorkingDir = wd
			_, err := ft.Apply(ctx, ac, p, fp)
			Expect(err).ToNot(HaveOccurred())
			Expect(fp.calls[1]).To(Equal(`Store /srv/f "" "` + filepath.Join(wd, "files", "a.conf") + `" root:root 0644`))
		})

		It("fails invalid for a relative source without working directory", func() {
			fp := &fakeProvider{states: []*protocol.FileState{stAbsent}}
			p := fakeProps("present", nil)
			p.Source = "files/a.conf"
			_, err := ft.Apply(ctx, ac, p, fp)
			Expect(err).To(MatchError(resources.ErrInvalid))
			Expect(err).To(MatchError(ContainSubstring("property source")))
			Expect(fp.calls).To(BeEmpty())
		})

		It("fails when the source is missing, naming the property", func() {
			fp := &fakeProvider{states: []*protocol.FileState{stAbsent}}
			p := fakeProps("present", nil)
			p.Source = "/nonexistent/ccm-source"
			_, err := ft.Apply(ctx, ac, p, fp)
			Expect(err).To(MatchError(os.ErrNotExist))
			Expect(err).To(MatchError(ContainSubstring("property source")))
		})

		It("fails clearly for a provider of another type", func() {
			_, err := ft.Apply(ctx, ac, fakeProps("present", nil), namedOnly{})
			Expect(err).To(MatchError(ContainSubstring("does not implement filetype.Provider")))
		})

		It("fails clearly for properties of another type", func() {
			_, err := ft.Apply(ctx, ac, &otherProps{}, &fakeProvider{})
			Expect(err).To(MatchError(ContainSubstring("not *filetype.Properties")))
		})

		It("validates the properties it is given", func() {
			p := fakeProps("present", nil)
			p.Mode = "0888"
			_, err := ft.Apply(ctx, ac, p, &fakeProvider{})
			Expect(err).To(MatchError(resources.ErrInvalid))
		})
	})
})
