package usertype_test

import (
	"encoding/json"
	"errors"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/engine"
	"github.com/ccm-fleet/ccm/resources/usertype"
)

const hash = "$6$ccmfleet1$mKVqfZ4t9CuuQZ1EVkSwPhGBmcYgdKXrIKRE39adBPtrpCyPKlqR9w023ehpfXRx02OMoUJnD7WJDotYwuzC20"

// decode decodes and validates as the engine does.
func decode(doc string) (*usertype.Properties, error) {
	p, err := engine.DecodeJSON(usertype.Type{}, []byte(doc))
	if err != nil {
		return nil, err
	}
	return p.(*usertype.Properties), p.Validate()
}

var _ = Describe("user properties", func() {
	It("defaults ensure to present and membership to minimum", func() {
		p, err := decode(`{"name":"deploy"}`)
		Expect(err).NotTo(HaveOccurred())
		Expect(p.Ensure).To(Equal("present"))
		Expect(p.Membership).To(Equal("minimum"))
		Expect(p.Sensitive).To(BeFalse())
	})

	It("takes ids as numbers or strings of digits, as templates give them", func() {
		p, err := decode(`{"name":"deploy","uid":"2001","gid":2002}`)
		Expect(err).NotTo(HaveOccurred())
		Expect(p.UID.Int()).To(BeEquivalentTo(2001))
		Expect(p.GID.Int()).To(BeEquivalentTo(2002))
	})

	It("makes a user with a password sensitive and names the hash as its secret", func() {
		p, err := decode(`{"name":"deploy","password":"` + hash + `"}`)
		Expect(err).NotTo(HaveOccurred())
		Expect(p.Sensitive).To(BeTrue())
		props, values := p.Secrets()
		Expect(props).To(Equal([]string{"password"}))
		Expect(values).To(Equal([]string{hash}))
		red, err := json.Marshal(p.Redacted())
		Expect(err).NotTo(HaveOccurred())
		Expect(string(red)).NotTo(ContainSubstring(hash))
		Expect(p.Password).To(Equal(hash), "Redacted leaves the receiver alone")
	})

	DescribeTable("refuses, naming the property",
		func(doc, field, problem string) {
			_, err := decode(doc)
			var ie *resources.InvalidError
			Expect(errors.As(err, &ie)).To(BeTrue(), "%v", err)
			Expect(ie.Field).To(Equal(field))
			Expect(ie.Problem).To(ContainSubstring(problem))
		},
		Entry("ensure", `{"name":"deploy","ensure":"running"}`, "ensure", `"running" is not one of present, absent`),
		Entry("a name read as an option", `{"name":"-r"}`, "name", "must start with a letter or '_'"),
		Entry("a name with a comma", `{"name":"a,b"}`, "name", "must start with a letter or '_'"),
		Entry("a name too long", `{"name":"`+strings.Repeat("a", 33)+`"}`, "name", "longer than 32 bytes"),
		Entry("a negative uid", `{"name":"deploy","uid":-1}`, "uid", "is not between 0 and"),
		Entry("a uid past (uid_t)-2", `{"name":"deploy","uid":4294967295}`, "uid", "is not between 0 and"),
		Entry("a group that is not a name", `{"name":"deploy","group":"a:b"}`, "group", "must start with a letter"),
		Entry("a supplementary group twice", `{"name":"deploy","groups":["adm","adm"]}`, "groups", `"adm" is listed twice`),
		Entry("membership", `{"name":"deploy","membership":"exact"}`, "membership", `"exact" is not one of minimum, inclusive`),
		Entry("a relative home", `{"name":"deploy","home":"home/deploy"}`, "home", "is not an absolute path"),
		Entry("a shell with a colon", `{"name":"deploy","shell":"/bin/sh:x"}`, "shell", "holds ':'"),
		Entry("a comment with a newline", `{"name":"deploy","comment":"a\nb"}`, "comment", "a newline"),
		Entry("manage_home without home", `{"name":"deploy","manage_home":true}`, "home", "is required with manage_home"),
		Entry("a clear-text password", `{"name":"deploy","password":"hunter2"}`, "password", "is not a crypt(3) hash"),
		Entry("an expiry that is not a date", `{"name":"deploy","expiry":"tomorrow"}`, "expiry", "is not a date"),
	)

	It("refuses gid and group together", func() {
		_, err := decode(`{"name":"deploy","gid":10,"group":"adm"}`)
		Expect(err).To(MatchError(ContainSubstring("properties gid and group both name the primary group")))
	})

	It("never quotes a refused password", func() {
		_, err := decode(`{"name":"deploy","password":"my secret words"}`)
		Expect(err).To(MatchError(resources.ErrInvalid))
		Expect(err.Error()).NotTo(ContainSubstring("secret words"))
	})
})
