package scope_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/filetype"
	"github.com/ccm-fleet/ccm/resources/grouptype"
	"github.com/ccm-fleet/ccm/resources/usertype"
	"github.com/ccm-fleet/ccm/trust/scope"
)

// userProps decodes a user's properties the way the engine does.
func userProps(doc map[string]any) resources.Properties {
	GinkgoHelper()
	p := &usertype.Properties{}
	p.Name, _ = doc["name"].(string)
	if v, ok := doc["uid"].(int); ok {
		id := grouptype.ID(v)
		p.UID = &id
	}
	p.Group, _ = doc["group"].(string)
	if gs, ok := doc["groups"].([]string); ok {
		p.Groups = gs
	}
	p.Home, _ = doc["home"].(string)
	p.ManageHome, _ = doc["manage_home"].(bool)
	Expect(p.Validate()).To(Succeed())
	return p
}

func groupProps(name string, members ...string) resources.Properties {
	GinkgoHelper()
	p := &grouptype.Properties{Members: members}
	p.Name = name
	Expect(p.Validate()).To(Succeed())
	return p
}

var _ = Describe("account scopes", func() {
	var s *scope.Scope
	BeforeEach(func() {
		var err error
		s, err = scope.Compile(&scope.Rules{
			User:  &scope.Names{Names: []string{"deploy", "app-*"}},
			Group: &scope.Names{Names: []string{"deployers", "adm"}},
		}, &scope.Rules{User: &scope.Names{Names: []string{"app-root"}}}, []string{"user", "group"})
		Expect(err).NotTo(HaveOccurred())
	})

	It("judges a user's name by user.names and deny.user.names", func() {
		for name, want := range map[string]string{"deploy": `user.names[0] "deploy"`, "app-web": `user.names[1] "app-*"`, "app-root": `deny.user.names[0] "app-root"`, "mallory": "user.names (no entry matches: default deny)"} {
			d := verdict(s.Resource(scope.Resolver{}, userProps(map[string]any{"name": name}), ""))
			Expect(d.Rule).To(Equal(want), name)
			Expect(d.Allowed).To(Equal(want[0] == 'u' && name != "mallory"), name)
		}
	})

	It("refuses adding a user to a group the policy does not list: supplementary or primary", func() {
		d := verdict(s.Resource(scope.Resolver{}, userProps(map[string]any{"name": "deploy", "groups": []string{"adm", "sudo"}}), ""))
		Expect(d.Allowed).To(BeFalse())
		Expect(d.String()).To(Equal(`denied groups "sudo" by group.names (no entry matches: default deny)`))
		d = verdict(s.Resource(scope.Resolver{}, userProps(map[string]any{"name": "deploy", "group": "root"}), ""))
		Expect(d.Allowed).To(BeFalse())
		Expect(d.Check).To(Equal("group"))
		Expect(verdict(s.Resource(scope.Resolver{}, userProps(map[string]any{"name": "deploy", "groups": []string{"adm", "deployers"}}), "")).Allowed).To(BeTrue())
	})

	It("judges a group's name by group.names and its members by user.names", func() {
		Expect(verdict(s.Resource(scope.Resolver{}, groupProps("deployers", "deploy"), "")).Allowed).To(BeTrue())
		d := verdict(s.Resource(scope.Resolver{}, groupProps("sudo", "deploy"), ""))
		Expect(d.String()).To(Equal(`denied name "sudo" by group.names (no entry matches: default deny)`))
		d = verdict(s.Resource(scope.Resolver{}, groupProps("deployers", "deploy", "mallory"), ""))
		Expect(d.String()).To(Equal(`denied members "mallory" by user.names (no entry matches: default deny)`))
	})

	It("refuses uid 0 to every signer, with or without scopes", func() {
		var none *scope.Scope
		for _, sc := range []*scope.Scope{s, none} {
			d := verdict(sc.Resource(scope.Resolver{}, userProps(map[string]any{"name": "deploy", "uid": 0}), ""))
			Expect(d.Allowed).To(BeFalse())
			Expect(d.Rule).To(Equal("user.uid"))
			Expect(d.Reason).To(Equal("no signer may give an account uid 0"))
			for _, d := range sc.Resource(scope.Resolver{}, userProps(map[string]any{"name": "deploy", "uid": 2001}), "") {
				Expect(d.Allowed).To(BeTrue(), d.String())
			}
		}
	})

	It("judges the account files and a managed home by file.paths", func() {
		files, err := scope.Compile(&scope.Rules{File: &scope.Files{Paths: []string{"/etc/passwd", "/etc/shadow", "/etc/group", "/etc/gshadow", "/home"}}}, nil, []string{"user", "group"})
		Expect(err).NotTo(HaveOccurred())
		Expect(verdict(files.Resource(scope.Resolver{}, userProps(map[string]any{"name": "deploy", "home": "/home/deploy", "manage_home": true}), "")).Allowed).To(BeTrue())
		d := verdict(files.Resource(scope.Resolver{}, userProps(map[string]any{"name": "deploy", "home": "/srv/deploy", "manage_home": true}), ""))
		Expect(d.Allowed).To(BeFalse())
		Expect(d.Check).To(Equal("home"))

		etcOnly, err := scope.Compile(&scope.Rules{File: &scope.Files{Paths: []string{"/etc/group", "/etc/gshadow"}}}, nil, []string{"user", "group"})
		Expect(err).NotTo(HaveOccurred())
		Expect(verdict(etcOnly.Resource(scope.Resolver{}, groupProps("deployers"), "")).Allowed).To(BeTrue())
		d = verdict(etcOnly.Resource(scope.Resolver{}, userProps(map[string]any{"name": "deploy"}), ""))
		Expect(d.Allowed).To(BeFalse())
		Expect(d.Value).To(Equal("/etc/passwd"))
	})

	It("refuses user and group rules for a signer allowed neither type", func() {
		_, err := scope.Compile(&scope.Rules{User: &scope.Names{Names: []string{"deploy"}}}, nil, []string{"file"})
		Expect(err).To(MatchError(scope.ErrRule))
		Expect(err.Error()).To(ContainSubstring("user: the signer is not allowed user or group"))
		_, err = scope.Compile(nil, &scope.Rules{Group: &scope.Names{Names: []string{"adm"}}}, []string{"group"})
		Expect(err).NotTo(HaveOccurred())
	})

	It("leaves files naming accounts to the file scope", func() {
		p := &filetype.Properties{Owner: "mallory", Group: "sudo", Mode: "0644"}
		p.Name = "/srv/x"
		Expect(p.Validate()).To(Succeed())
		Expect(s.Resource(scope.Resolver{}, p, "")).To(BeEmpty())
	})
})
