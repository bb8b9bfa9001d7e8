package grouptype_test

import (
	"context"
	"errors"
	"slices"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/engine"
	"github.com/ccm-fleet/ccm/resources/grouptype"
)

// fakeGroups is a hand-written group provider over groups in memory.
type fakeGroups struct {
	groups map[string]*protocol.GroupMetadata
	calls  []string
}

var _ grouptype.Provider = (*fakeGroups)(nil)

func (f *fakeGroups) Name() string { return "fake" }

func (f *fakeGroups) Status(_ context.Context, group string) (*protocol.GroupState, error) {
	m, ok := f.groups[group]
	if !ok {
		return &protocol.GroupState{CommonState: protocol.NewCommonState(protocol.TypeGroup, group, "absent"), Metadata: &protocol.GroupMetadata{Name: group, Members: []string{}}}, nil
	}
	c := *m
	c.Members = slices.Clone(m.Members)
	return &protocol.GroupState{CommonState: protocol.NewCommonState(protocol.TypeGroup, group, "present"), Metadata: &c}, nil
}

func (f *fakeGroups) GroupByID(_ context.Context, gid int64) (string, error) {
	for n, m := range f.groups {
		if m.GID != nil && *m.GID == gid {
			return n, nil
		}
	}
	return "", nil
}

func (f *fakeGroups) Create(_ context.Context, group string, gid *grouptype.ID, _ bool) error {
	f.calls = append(f.calls, "create")
	id := int64(1000)
	if gid != nil {
		id = gid.Int()
	}
	f.groups[group] = &protocol.GroupMetadata{Name: group, GID: &id, Members: []string{}}
	return nil
}

func (f *fakeGroups) SetGID(_ context.Context, group string, gid int64) error {
	f.calls = append(f.calls, "gid")
	f.groups[group].GID = &gid
	return nil
}

func (f *fakeGroups) SetMembers(_ context.Context, group string, members []string) error {
	f.calls = append(f.calls, "members")
	f.groups[group].Members = slices.Clone(members)
	return nil
}

func (f *fakeGroups) Delete(_ context.Context, group string) error {
	f.calls = append(f.calls, "delete")
	delete(f.groups, group)
	return nil
}

func apply(f *fakeGroups, noop bool, doc string) (*resources.Outcome, error) {
	GinkgoHelper()
	p, err := engine.DecodeJSON(grouptype.Type{}, []byte(doc))
	Expect(err).NotTo(HaveOccurred())
	Expect(p.Validate()).To(Succeed())
	return grouptype.Type{}.Apply(context.Background(), &resources.ApplyContext{Noop: noop}, p, f)
}

var _ = Describe("the group type", func() {
	var f *fakeGroups
	BeforeEach(func() {
		gid := int64(1500)
		f = &fakeGroups{groups: map[string]*protocol.GroupMetadata{"taken": {Name: "taken", GID: &gid, Members: []string{"alice"}}}}
	})

	It("creates a group and its members; a noop names both and calls nothing", func() {
		out, err := apply(f, true, `{"name":"deployers","gid":3001,"members":["bob","alice"]}`)
		Expect(err).NotTo(HaveOccurred())
		Expect(out.NoopMessage).To(Equal("Would have created the group. Would have added members alice, bob"))
		Expect(f.calls).To(BeEmpty())
		_, err = apply(f, false, `{"name":"deployers","gid":3001,"members":["bob","alice"]}`)
		Expect(err).NotTo(HaveOccurred())
		Expect(f.calls).To(Equal([]string{"create", "members"}))
		Expect(f.groups["deployers"].Members).To(Equal([]string{"alice", "bob"}))
	})

	It("keeps other members with minimum and removes them with inclusive", func() {
		out, err := apply(f, true, `{"name":"taken","members":["bob"]}`)
		Expect(err).NotTo(HaveOccurred())
		Expect(out.NoopMessage).To(Equal("Would have added members bob"))
		Expect(out.Diff.Changes).To(ConsistOf(protocol.Change{Field: "members", From: "alice", To: "alice, bob"}))
		out, err = apply(f, true, `{"name":"taken","members":["bob"],"membership":"inclusive"}`)
		Expect(err).NotTo(HaveOccurred())
		Expect(out.NoopMessage).To(Equal("Would have added members bob. Would have removed members alice"))
		out, err = apply(f, true, `{"name":"taken"}`)
		Expect(err).NotTo(HaveOccurred())
		Expect(out.Changed).To(BeFalse(), "members left out are left alone")
	})

	It("refuses a gid another group holds, changing nothing", func() {
		_, err := apply(f, false, `{"name":"deployers","gid":1500}`)
		Expect(err).To(MatchError(grouptype.ErrConflict))
		Expect(err.Error()).To(ContainSubstring("gid 1500 belongs to group taken; nothing was changed"))
		Expect(f.calls).To(BeEmpty())
	})

	DescribeTable("refuses bad properties, naming them",
		func(doc, field string) {
			p, err := engine.DecodeJSON(grouptype.Type{}, []byte(doc))
			if err == nil {
				err = p.Validate()
			}
			var ie *resources.InvalidError
			Expect(errors.As(err, &ie)).To(BeTrue(), "%v", err)
			Expect(ie.Field).To(Equal(field))
		},
		Entry("ensure", `{"name":"g","ensure":"stopped"}`, "ensure"),
		Entry("a name read as an option", `{"name":"-g"}`, "name"),
		Entry("a gid that is not a number", `{"name":"g","gid":"ten"}`, "gid"),
		Entry("a member with a comma", `{"name":"g","members":["a,b"]}`, "members"),
		Entry("membership", `{"name":"g","membership":"all"}`, "membership"),
	)
})
