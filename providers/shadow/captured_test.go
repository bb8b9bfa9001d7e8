package shadow_test

import (
	"context"
	"errors"
	"strings"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/providers/runner"
	"github.com/ccm-fleet/ccm/providers/shadow"
	"github.com/ccm-fleet/ccm/resources/grouptype"
	"github.com/ccm-fleet/ccm/resources/usertype"
)

// Output captured from getent on Debian for an account made with useradd
// -u 2001 -G adm,sudo -c 'Deploy user' -d /home/deploy -s /bin/bash -e
// 2030-01-01, a hash set with chpasswd -e and locked with usermod -L.
var _ = Describe("the useradd provider on captured output", func() {
	newUser := func(f *runner.Fake) *shadow.User {
		p, err := shadow.NewUserFactory(f, nil, &sync.Mutex{}).New()
		Expect(err).NotTo(HaveOccurred())
		return p.(*shadow.User)
	}

	It("reads an account with getent: passwd, its primary group, shadow, initgroups and the groups' names", func() {
		f := (&runner.Fake{}).
			ExpectFile([]string{"getent", "passwd", "deploy"}, 0, "testdata/getent-passwd-deploy.txt").
			ExpectFile([]string{"getent", "group", "2001"}, 0, "testdata/getent-group-2001.txt").
			ExpectFile([]string{"getent", "shadow", "deploy"}, 0, "testdata/getent-shadow-deploy.txt").
			ExpectFile([]string{"getent", "initgroups", "deploy"}, 0, "testdata/getent-initgroups-deploy.txt").
			ExpectFile([]string{"getent", "group", "4", "27"}, 0, "testdata/getent-group-4-27.txt")
		st, err := newUser(f).Status(context.Background(), "deploy")
		Expect(err).NotTo(HaveOccurred())
		Expect(f.Verify()).To(Succeed())
		Expect(st.Ensure).To(Equal("present"))
		uid, gid := int64(2001), int64(2001)
		Expect(st.Metadata).To(Equal(&protocol.UserMetadata{Name: "deploy", Provider: "useradd", UID: &uid, GID: &gid, Group: "deploy",
			Groups: []string{"adm", "sudo"}, Home: "/home/deploy", Shell: "/bin/bash", Comment: "Deploy user", Expiry: "2030-01-01", Locked: true, PasswordSet: true}))
		for _, c := range f.Calls() {
			Expect(c.SearchPath).To(Equal(shadow.SearchPath))
		}
	})

	It("reads a missing account as absent from getent's exit code 2", func() {
		f := (&runner.Fake{}).Expect([]string{"getent", "passwd", "nobody2"}, 2, "")
		st, err := newUser(f).Status(context.Background(), "nobody2")
		Expect(err).NotTo(HaveOccurred())
		Expect(st.Ensure).To(Equal("absent"))
		Expect(st.Metadata.UID).To(BeNil())
	})

	It("fails with getent's other exit codes, naming the command", func() {
		f := (&runner.Fake{}).Add(runner.Expectation{Argv: []string{"getent", "passwd", "deploy"}, Result: runner.Result{ExitCode: 1, Stderr: []byte("boom")}})
		_, err := newUser(f).Status(context.Background(), "deploy")
		Expect(err).To(MatchError(shadow.ErrCommand))
		Expect(err.Error()).To(ContainSubstring("getent passwd deploy"))
	})

	It("reads the hash without the lock's '!'", func() {
		f := (&runner.Fake{}).ExpectFile([]string{"getent", "shadow", "deploy"}, 0, "testdata/getent-shadow-deploy.txt")
		h, err := newUser(f).PasswordHash(context.Background(), "deploy")
		Expect(err).NotTo(HaveOccurred())
		Expect(h).To(HavePrefix("$6$ccmfleet1$"))
	})

	It("creates with useradd's flags, -- before the name, and sets the hash on chpasswd's stdin only", func() {
		uid, gid := grouptype.ID(2001), grouptype.ID(3001)
		comment := "Deploy"
		p := &usertype.Properties{UID: &uid, GID: &gid, Groups: []string{"adm", "sudo"}, Home: "/home/deploy", ManageHome: true,
			Shell: "/bin/bash", Comment: &comment, System: true, Expiry: "2030-01-01", Password: "$6$x$secrethash"}
		p.Name = "deploy"
		f := (&runner.Fake{}).
			Expect([]string{"useradd", "-u", "2001", "-g", "3001", "-G", "adm,sudo", "-d", "/home/deploy", "-m", "-s", "/bin/bash", "-c", "Deploy", "-r", "-e", "2030-01-01", "--", "deploy"}, 0, "").
			Expect([]string{"chpasswd", "-e"}, 0, "")
		u := newUser(f)
		Expect(u.Create(context.Background(), p)).To(Succeed())
		Expect(u.SetPassword(context.Background(), "deploy", p.Password)).To(Succeed())
		Expect(f.Verify()).To(Succeed())
		calls := f.Calls()
		Expect(string(calls[1].Stdin)).To(Equal("deploy:$6$x$secrethash\n"))
		for _, c := range calls {
			Expect(c.String()).NotTo(ContainSubstring("secrethash"))
		}
	})

	DescribeTable("changes one attribute with usermod",
		func(c usertype.Change, argv ...string) {
			f := (&runner.Fake{}).Expect(append([]string{"usermod"}, append(argv, "--", "deploy")...), 0, "")
			Expect(newUser(f).Modify(context.Background(), "deploy", c)).To(Succeed())
			Expect(f.Verify()).To(Succeed())
		},
		Entry("uid", usertype.Change{Attribute: usertype.AttrUID, Value: "2002"}, "-u", "2002"),
		Entry("primary group", usertype.Change{Attribute: usertype.AttrGroup, Value: "staff"}, "-g", "staff"),
		Entry("groups, minimum", usertype.Change{Attribute: usertype.AttrGroups, Groups: []string{"adm"}, Append: true}, "-a", "-G", "adm"),
		Entry("groups, inclusive", usertype.Change{Attribute: usertype.AttrGroups, Groups: []string{"adm", "sudo"}}, "-G", "adm,sudo"),
		Entry("groups, inclusive and none", usertype.Change{Attribute: usertype.AttrGroups, Groups: []string{}}, "-G", ""),
		Entry("home, moved", usertype.Change{Attribute: usertype.AttrHome, Value: "/srv/deploy", MoveHome: true}, "-d", "/srv/deploy", "-m"),
		Entry("shell", usertype.Change{Attribute: usertype.AttrShell, Value: "/bin/sh"}, "-s", "/bin/sh"),
		Entry("comment", usertype.Change{Attribute: usertype.AttrComment, Value: ""}, "-c", ""),
		Entry("expiry", usertype.Change{Attribute: usertype.AttrExpiry, Value: "2030-01-01"}, "-e", "2030-01-01"),
		Entry("expiry never", usertype.Change{Attribute: usertype.AttrExpiry, Value: "never"}, "-e", ""),
		Entry("lock", usertype.Change{Attribute: usertype.AttrLocked, Value: "true"}, "-L"),
		Entry("unlock", usertype.Change{Attribute: usertype.AttrLocked, Value: "false"}, "-U"),
	)

	It("names the tool and what it printed when it fails", func() {
		f := (&runner.Fake{}).Add(runner.Expectation{Argv: []string{"userdel", "-r", "--", "deploy"}, Result: runner.Result{ExitCode: 8, Stderr: []byte("userdel: user deploy is currently used by process 1\n")}})
		err := newUser(f).Delete(context.Background(), "deploy", true)
		Expect(err).To(MatchError(shadow.ErrCommand))
		Expect(err.Error()).To(Equal("userdel -r -- deploy: command failed: exit code 8: userdel: user deploy is currently used by process 1"))
	})
})

var _ = Describe("the groupadd provider on captured output", func() {
	It("reads a group and its members, and changes it with groupadd, groupmod and gpasswd", func() {
		f := (&runner.Fake{}).
			ExpectFile([]string{"getent", "group", "adm"}, 0, "testdata/getent-group-4-27.txt").
			Expect([]string{"groupadd", "-g", "3001", "-r", "--", "deployers"}, 0, "").
			Expect([]string{"groupmod", "-g", "3002", "--", "deployers"}, 0, "").
			Expect([]string{"gpasswd", "-M", "alice,bob", "--", "deployers"}, 0, "").
			Expect([]string{"groupdel", "--", "deployers"}, 0, "")
		p, err := shadow.NewGroupFactory(f, nil, &sync.Mutex{}).New()
		Expect(err).NotTo(HaveOccurred())
		g := p.(grouptype.Provider)
		ctx := context.Background()
		st, err := g.Status(ctx, "adm")
		Expect(err).NotTo(HaveOccurred())
		Expect(*st.Metadata.GID).To(BeEquivalentTo(4))
		Expect(st.Metadata.Members).To(Equal([]string{"deploy"}))
		gid := grouptype.ID(3001)
		Expect(g.Create(ctx, "deployers", &gid, true)).To(Succeed())
		Expect(g.SetGID(ctx, "deployers", 3002)).To(Succeed())
		Expect(g.SetMembers(ctx, "deployers", []string{"alice", "bob"})).To(Succeed())
		Expect(g.Delete(ctx, "deployers")).To(Succeed())
		Expect(f.Verify()).To(Succeed())
	})
})

var _ = Describe("the factories", func() {
	It("are manageable with priority 1 where every tool is in the system directories, and not where one is missing", func() {
		have := func(missing string) func(string) (string, error) {
			return func(p string) (string, error) {
				if strings.HasSuffix(p, "/"+missing) {
					return "", errors.New("not found")
				}
				return p, nil
			}
		}
		uf := shadow.NewUserFactory(&runner.Fake{}, nil, nil)
		gf := shadow.NewGroupFactory(&runner.Fake{}, nil, nil)
		Expect(uf.Type()).To(Equal("user"))
		Expect(uf.Name()).To(Equal("useradd"))
		Expect(gf.Type()).To(Equal("group"))
		Expect(gf.Name()).To(Equal("groupadd"))
		uf.SetLookPath(have("nothing"))
		ok, prio, err := uf.IsManageable(nil, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(ok).To(BeTrue())
		Expect(prio).To(Equal(1))
		uf.SetLookPath(have("chpasswd"))
		ok, _, err = uf.IsManageable(nil, nil)
		Expect(err).NotTo(HaveOccurred())
		Expect(ok).To(BeFalse())
		gf.SetLookPath(have("gpasswd"))
		ok, _, _ = gf.IsManageable(nil, nil)
		Expect(ok).To(BeFalse())
	})
})
