package scaffoldtype_test

import (
	"context"
	"errors"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/scaffoldtype"
	"github.com/ccm-fleet/ccm/resources/templates"
)

// fakeProvider returns scripted states and records what it was asked.
type fakeProvider struct {
	statuses  []*protocol.ScaffoldState // returned by Status in order
	statusErr error
	scaffold  *protocol.ScaffoldState
	calls     []string
	sources   []string
}

func (f *fakeProvider) Name() string { return "fake" }

func (f *fakeProvider) Status(_ context.Context, _ *templates.Env, p *scaffoldtype.Properties) (*protocol.ScaffoldState, error) {
	f.calls = append(f.calls, "status")
	f.sources = append(f.sources, p.Source)
	if f.statusErr != nil {
		return nil, f.statusErr
	}
	st := f.statuses[0]
	if len(f.statuses) > 1 {
		f.statuses = f.statuses[1:]
	}
	return st, nil
}

func (f *fakeProvider) Scaffold(_ context.Context, _ *templates.Env, _ *scaffoldtype.Properties, noop bool) (*protocol.ScaffoldState, error) {
	f.calls = append(f.calls, "scaffold")
	return f.scaffold, nil
}

func (f *fakeProvider) Remove(_ context.Context, _ *scaffoldtype.Properties, _ *protocol.ScaffoldState) error {
	f.calls = append(f.calls, "remove")
	return nil
}

type plainProvider struct{}

func (plainProvider) Name() string { return "plain" }

func state(exists bool, changed, purged, stable int) *protocol.ScaffoldState {
	files := func(prefix string, n int) []string {
		out := []string{}
		for i := range n {
			out = append(out, "/etc/app/"+prefix+string(rune('a'+i)))
		}
		return out
	}
	return &protocol.ScaffoldState{
		CommonState: protocol.NewCommonState("scaffold", "/etc/app", "present"),
		Metadata: &protocol.ScaffoldMetadata{
			Name: "/etc/app", Provider: "fake", TargetExists: exists,
			Changed: files("changed", changed), Purged: files("purged", purged), Stable: files("stable", stable),
		},
	}
}

func props(ensure string, purge bool) *scaffoldtype.Properties {
	p := valid()
	p.Ensure = ensure
	p.Purge = purge
	Expect(p.Validate()).To(Succeed())
	return p
}

var _ = Describe("Type", func() {
	// absent is desired when the target is missing or holds no managed file;
	// present when the target exists, no file changed and, with purge on,
	// none is to be purged.
	DescribeTable("decides whether the target is in its desired state",
		func(ensure string, exists bool, changed, purged int, purge bool, want bool) {
			Expect(scaffoldtype.IsDesired(props(ensure, purge), state(exists, changed, purged, 1))).To(Equal(want))
		},
		Entry("absent, target missing", "absent", false, 0, 0, false, true),
		Entry("absent, target missing (N/A lists set)", "absent", false, 2, 2, true, true),
		Entry("absent, target exists, no managed files on disk, purged files", "absent", true, 0, 3, true, false),
		Entry("absent, target exists, managed files remain", "absent", true, 2, 0, false, false),
		Entry("absent, target exists, managed files remain, purged files", "absent", true, 2, 3, true, false),
		Entry("present, target exists, none changed, none purged, purge off", "present", true, 0, 0, false, true),
		Entry("present, target exists, none changed, none purged, purge on", "present", true, 0, 0, true, true),
		Entry("present, target exists, none changed, some purged, purge off", "present", true, 0, 2, false, true),
		Entry("present, target exists, none changed, some purged, purge on", "present", true, 0, 2, true, false),
		Entry("present, target exists, some changed, none purged, purge off", "present", true, 1, 0, false, false),
		Entry("present, target exists, some changed, some purged, purge on", "present", true, 1, 2, true, false),
		Entry("present, target missing, purge off", "present", false, 0, 0, false, false),
		Entry("present, target missing, purge on", "present", false, 3, 0, true, false),
	)

	It("treats absent with no managed files on disk as desired, ignoring purged files", func() {
		st := state(true, 0, 3, 0)
		Expect(scaffoldtype.IsDesired(props("absent", false), st)).To(BeTrue())
		Expect(scaffoldtype.IsDesired(props("absent", false), state(true, 0, 0, 1))).To(BeFalse())
		Expect(scaffoldtype.IsDesired(props("present", false), nil)).To(BeFalse())
	})

	// Under noop the message counts the files that would be changed
	// (present) or removed (absent: every managed file), purged ones only
	// with purge on; a desired target says nothing.
	DescribeTable("reports under noop without changing anything",
		func(ensure string, purge bool, st *protocol.ScaffoldState, wantChanged bool, wantMsg string) {
			f := &fakeProvider{statuses: []*protocol.ScaffoldState{st}}
			out, err := scaffoldtype.Type{}.Apply(context.Background(), &resources.ApplyContext{Noop: true}, props(ensure, purge), f)
			Expect(err).NotTo(HaveOccurred())
			Expect(f.calls).To(Equal([]string{"status"}))
			Expect(out.Changed).To(Equal(wantChanged))
			Expect(out.NoopMessage).To(Equal(wantMsg))
			Expect(out.State).To(BeIdenticalTo(st))
		},
		Entry("present: changed only", "present", false, state(true, 3, 0, 2), true, "Would have changed 3 scaffold files"),
		Entry("present: purged ignored without purge", "present", false, state(true, 2, 4, 1), true, "Would have changed 2 scaffold files"),
		Entry("present: purged counted with purge", "present", true, state(true, 2, 4, 1), true, "Would have changed 6 scaffold files"),
		Entry("present: only purged with purge", "present", true, state(true, 0, 1, 5), true, "Would have changed 1 scaffold files"),
		Entry("present: target missing", "present", false, state(false, 4, 0, 0), true, "Would have changed 4 scaffold files"),
		Entry("present: desired", "present", true, state(true, 0, 0, 5), false, ""),
		Entry("present: purged without purge is desired", "present", false, state(true, 0, 3, 5), false, ""),
		Entry("absent: changed and stable", "absent", false, state(true, 1, 0, 2), true, "Would have removed 3 scaffold files"),
		Entry("absent: purged counted with purge", "absent", true, state(true, 1, 2, 2), true, "Would have removed 5 scaffold files"),
		Entry("absent: purged not counted without purge", "absent", false, state(true, 1, 2, 2), true, "Would have removed 3 scaffold files"),
		Entry("absent: desired", "absent", false, state(true, 0, 2, 0), false, ""),
		Entry("absent: target missing", "absent", true, state(false, 0, 0, 0), false, ""),
	)

	It("does nothing when already in the desired state", func() {
		st := state(true, 0, 0, 3)
		f := &fakeProvider{statuses: []*protocol.ScaffoldState{st}}
		out, err := scaffoldtype.Type{}.Apply(context.Background(), &resources.ApplyContext{}, props("present", false), f)
		Expect(err).NotTo(HaveOccurred())
		Expect(f.calls).To(Equal([]string{"status"}))
		Expect(out.Changed).To(BeFalse())
		Expect(out.NoopMessage).To(BeEmpty())
	})

	It("renders for present, checks again and returns the state read again, as CCM reports it", func() {
		rendered := state(true, 2, 0, 1)
		reread := state(true, 0, 0, 3)
		f := &fakeProvider{statuses: []*protocol.ScaffoldState{state(false, 3, 0, 0), reread}, scaffold: rendered}
		out, err := scaffoldtype.Type{}.Apply(context.Background(), &resources.ApplyContext{WorkingDir: "/srv/m"}, props("present", false), f)
		Expect(err).NotTo(HaveOccurred())
		Expect(f.calls).To(Equal([]string{"status", "scaffold", "status"}))
		Expect(f.sources).To(HaveEach("/srv/m/templates/app"))
		Expect(out.Changed).To(BeTrue())
		Expect(out.State).To(BeIdenticalTo(reread))
	})

	It("leaves the caller's source as written", func() {
		p := props("present", false)
		f := &fakeProvider{statuses: []*protocol.ScaffoldState{state(true, 0, 0, 1)}}
		_, err := scaffoldtype.Type{}.Apply(context.Background(), &resources.ApplyContext{WorkingDir: "/srv/m"}, p, f)
		Expect(err).NotTo(HaveOccurred())
		Expect(p.Source).To(Equal("templates/app"))
	})

	It("removes for absent and returns the state found afterwards", func() {
		after := state(true, 0, 1, 0)
		f := &fakeProvider{statuses: []*protocol.ScaffoldState{state(true, 1, 1, 2), after}}
		out, err := scaffoldtype.Type{}.Apply(context.Background(), &resources.ApplyContext{}, props("absent", false), f)
		Expect(err).NotTo(HaveOccurred())
		Expect(f.calls).To(Equal([]string{"status", "remove", "status"}))
		Expect(out.Changed).To(BeTrue())
		Expect(out.State).To(BeIdenticalTo(after))
	})

	DescribeTable("fails with ErrDesiredStateFailed when the target is still wrong after applying",
		func(ensure string, purge bool, after *protocol.ScaffoldState) {
			f := &fakeProvider{statuses: []*protocol.ScaffoldState{state(true, 1, 1, 1), after}, scaffold: state(true, 1, 1, 1)}
			out, err := scaffoldtype.Type{}.Apply(context.Background(), &resources.ApplyContext{}, props(ensure, purge), f)
			Expect(err).To(MatchError(resources.ErrDesiredStateFailed))
			Expect(err).To(MatchError(ContainSubstring("scaffold /etc/app")))
			Expect(out.State).To(BeIdenticalTo(after))
		},
		Entry("present with files still changed", "present", false, state(true, 1, 0, 1)),
		Entry("present with purge and files still purged", "present", true, state(true, 0, 1, 1)),
		Entry("absent with managed files left", "absent", false, state(true, 0, 0, 1)),
	)

	It("fails when status fails", func() {
		boom := errors.New("boom")
		f := &fakeProvider{statusErr: boom}
		_, err := scaffoldtype.Type{}.Apply(context.Background(), &resources.ApplyContext{}, props("present", false), f)
		Expect(err).To(MatchError(boom))
		Expect(f.calls).To(Equal([]string{"status"}))
	})

	It("rejects a provider that is not a scaffold provider", func() {
		_, err := scaffoldtype.Type{}.Apply(context.Background(), &resources.ApplyContext{}, props("present", false), plainProvider{})
		Expect(err).To(MatchError(scaffoldtype.ErrNotScaffoldProvider))
	})
})
