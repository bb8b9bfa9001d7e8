package usertype_test

import (
	"context"
	"slices"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/grouptype"
	"github.com/ccm-fleet/ccm/resources/usertype"
)

// fakeUsers is a hand-written user provider over accounts in memory,
// recording each change.
type fakeUsers struct {
	accounts map[string]*protocol.UserMetadata
	hashes   map[string]string
	calls    []string
}

var _ usertype.Provider = (*fakeUsers)(nil)

func (f *fakeUsers) Name() string { return "fake" }

func (f *fakeUsers) Status(_ context.Context, user string) (*protocol.UserState, error) {
	m, ok := f.accounts[user]
	if !ok {
		return &protocol.UserState{CommonState: protocol.NewCommonState(protocol.TypeUser, user, "absent"), Metadata: &protocol.UserMetadata{Name: user}}, nil
	}
	c := *m
	c.Groups = slices.Clone(m.Groups)
	return &protocol.UserState{CommonState: protocol.NewCommonState(protocol.TypeUser, user, "present"), Metadata: &c}, nil
}

func (f *fakeUsers) PasswordHash(_ context.Context, user string) (string, error) {
	return f.hashes[user], nil
}

func (f *fakeUsers) UserByID(_ context.Context, uid int64) (string, error) {
	for n, m := range f.accounts {
		if m.UID != nil && *m.UID == uid {
			return n, nil
		}
	}
	return "", nil
}

func (f *fakeUsers) Create(_ context.Context, p *usertype.Properties) error {
	f.calls = append(f.calls, "create")
	uid := int64(1000)
	if p.UID != nil {
		uid = p.UID.Int()
	}
	f.accounts[p.Name] = &protocol.UserMetadata{Name: p.Name, UID: &uid, Shell: p.Shell, Groups: slices.Clone(p.Groups), Expiry: "never"}
	return nil
}

func (f *fakeUsers) Modify(_ context.Context, user string, c usertype.Change) error {
	f.calls = append(f.calls, "modify "+c.Attribute)
	m := f.accounts[user]
	switch c.Attribute {
	case usertype.AttrShell:
		m.Shell = c.Value
	case usertype.AttrLocked:
		m.Locked = c.Value == "true"
	case usertype.AttrGroups:
		if c.Append {
			m.Groups = append(m.Groups, c.Groups...)
		} else {
			m.Groups = slices.Clone(c.Groups)
		}
	}
	return nil
}

func (f *fakeUsers) SetPassword(_ context.Context, user, hash string) error {
	f.calls = append(f.calls, "password")
	f.hashes[user] = hash
	f.accounts[user].Locked = false
	return nil
}

func (f *fakeUsers) Delete(_ context.Context, user string, _ bool) error {
	f.calls = append(f.calls, "delete")
	delete(f.accounts, user)
	return nil
}

func newFake() *fakeUsers {
	uid := int64(1500)
	return &fakeUsers{accounts: map[string]*protocol.UserMetadata{
		"taken": {Name: "taken", UID: &uid, Shell: "/bin/sh", Groups: []string{}},
	}, hashes: map[string]string{}}
}

func apply(f *fakeUsers, noop bool, doc string) (*resources.Outcome, error) {
	GinkgoHelper()
	p, err := decode(doc)
	Expect(err).NotTo(HaveOccurred())
	return usertype.Type{}.Apply(context.Background(), &resources.ApplyContext{Noop: noop}, p, f)
}

var _ = Describe("the user type", func() {
	It("is user, present by default, with the seeds' protocol id", func() {
		Expect(usertype.Type{}.Name()).To(Equal("user"))
		Expect(usertype.Type{}.DefaultEnsure()).To(Equal("present"))
		Expect(protocol.StateProtocol("user")).To(Equal("io.choria.ccm.v1.resource.user.state"))
	})

	It("creates, sets the hash, then locks, in that order; a noop names each and calls nothing", func() {
		f := newFake()
		doc := `{"name":"deploy","shell":"/bin/bash","password":"` + hash + `","locked":true}`
		out, err := apply(f, true, doc)
		Expect(err).NotTo(HaveOccurred())
		Expect(out.NoopMessage).To(Equal("Would have created the user. Would have set the password. Would have locked the account"))
		Expect(f.calls).To(BeEmpty())
		out, err = apply(f, false, doc)
		Expect(err).NotTo(HaveOccurred())
		Expect(out.Changed).To(BeTrue())
		Expect(f.calls).To(Equal([]string{"create", "password", "modify locked"}))
		for _, c := range out.Diff.Changes {
			Expect(c.From + c.To).NotTo(ContainSubstring("ccmfleet1"))
		}
	})

	It("locks again after a new hash unlocked a locked account", func() {
		f := newFake()
		_, err := apply(f, false, `{"name":"deploy","password":"`+hash+`","locked":true}`)
		Expect(err).NotTo(HaveOccurred())
		f.calls = nil
		other := "$6$ccmfleet2$y0qwmHaC3V4Nc0MheU8kkXzJsxBat4PnnZITYDi96UBiOQ18vWS4Jv4QUmiVtOkdxyWZtJdQY5uqqnROjF2S4."
		out, err := apply(f, false, `{"name":"deploy","password":"`+other+`","locked":true}`)
		Expect(err).NotTo(HaveOccurred())
		Expect(out.NoopMessage).To(BeEmpty())
		Expect(f.calls).To(Equal([]string{"password", "modify locked"}))
		Expect(f.accounts["deploy"].Locked).To(BeTrue())
	})

	It("appends missing groups with minimum and sets the list with inclusive", func() {
		f := newFake()
		f.accounts["taken"].Groups = []string{"adm"}
		out, err := apply(f, true, `{"name":"taken","groups":["sudo"]}`)
		Expect(err).NotTo(HaveOccurred())
		Expect(out.NoopMessage).To(Equal("Would have added groups sudo"))
		Expect(out.Diff.Changes).To(ConsistOf(protocol.Change{Field: "groups", From: "adm", To: "adm, sudo"}))
		out, err = apply(f, true, `{"name":"taken","groups":["sudo"],"membership":"inclusive"}`)
		Expect(err).NotTo(HaveOccurred())
		Expect(out.NoopMessage).To(Equal("Would have added groups sudo. Would have removed groups adm"))
	})

	It("refuses a uid another user holds before calling anything that changes", func() {
		f := newFake()
		_, err := apply(f, false, `{"name":"deploy","uid":1500}`)
		Expect(err).To(MatchError(grouptype.ErrConflict))
		Expect(err.Error()).To(ContainSubstring("uid 1500 belongs to user taken; nothing was changed"))
		Expect(f.calls).To(BeEmpty())
	})

	It("fails as not in its desired state when the provider did not change it", func() {
		f := newFake()
		stuck := &stuckUsers{fakeUsers: f}
		p, err := decode(`{"name":"taken","shell":"/bin/zsh"}`)
		Expect(err).NotTo(HaveOccurred())
		_, err = usertype.Type{}.Apply(context.Background(), &resources.ApplyContext{}, p, stuck)
		Expect(err).To(MatchError(resources.ErrDesiredStateFailed))
		Expect(err.Error()).To(ContainSubstring("shell is /bin/sh, wanted /bin/zsh"))
	})
})

// stuckUsers accepts every change and makes none.
type stuckUsers struct{ *fakeUsers }

func (s *stuckUsers) Modify(_ context.Context, _ string, c usertype.Change) error {
	s.calls = append(s.calls, "modify "+c.Attribute)
	return nil
}

var _ = Describe("a locked account with its hash in place", func() {
	It("changes only what differs: no relock when the hash is the same", func() {
		f := newFake()
		_, err := apply(f, false, `{"name":"deploy","password":"`+hash+`","locked":true}`)
		Expect(err).NotTo(HaveOccurred())
		f.calls = nil
		out, err := apply(f, true, `{"name":"deploy","password":"`+hash+`","locked":true,"shell":"/bin/bash"}`)
		Expect(err).NotTo(HaveOccurred())
		Expect(out.NoopMessage).To(Equal(`Would have changed shell "" to /bin/bash`))
	})
})
