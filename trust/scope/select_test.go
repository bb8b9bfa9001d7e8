package scope_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/trust/scope"
)

var _ = Describe("hosts select entries", func() {
	all := []string{"file"}
	webDeb := map[string]any{"identity": "w1", "os": "debian", "role": "web", "env": "dev"}
	webRH := map[string]any{"identity": "w2", "os": "rhel", "role": "web", "env": "dev"}
	db := map[string]any{"identity": "d1", "os": "rhel", "role": "db", "env": "prod"}

	allowed := func(s *scope.Scope, facts map[string]any) bool {
		GinkgoHelper()
		d := s.Hosts(facts)
		Expect(d).ToNot(BeNil())
		return d.Allowed
	}

	It("judges a select entry beside --where terms, ANDed, as a request's filter is judged", func() {
		s, err := scope.Compile(&scope.Rules{Hosts: []string{"env!=staging", "select:  (os=debian and role=web) or role=db"}}, nil, all)
		Expect(err).ToNot(HaveOccurred())
		f, err := protocol.NewFilterSelect([]string{"env!=staging"}, nil, "(os=debian and role=web) or role=db")
		Expect(err).ToNot(HaveOccurred())
		for _, facts := range []map[string]any{webDeb, webRH, db} {
			Expect(allowed(s, facts)).To(Equal(f.Match(facts)), "%v", facts)
		}
		Expect([]bool{allowed(s, webDeb), allowed(s, webRH), allowed(s, db)}).To(Equal([]bool{true, false, true}))
		Expect(s.Hosts(webRH).Rule).To(Equal(`hosts ["env!=staging" "select: os=debian and role=web or role=db"]`))
	})

	It("ANDs several select entries", func() {
		s, err := scope.Compile(&scope.Rules{Hosts: []string{"select: role=web or role=db", "select: not os=rhel"}}, nil, all)
		Expect(err).ToNot(HaveOccurred())
		Expect([]bool{allowed(s, webDeb), allowed(s, webRH), allowed(s, db)}).To(Equal([]bool{true, false, false}))
	})

	It("refuses a host under deny.hosts when its select matches", func() {
		s, err := scope.Compile(nil, &scope.Rules{Hosts: []string{"select: env=prod or (os=rhel and not role=web)"}}, all)
		Expect(err).ToNot(HaveOccurred())
		Expect([]bool{allowed(s, webDeb), allowed(s, webRH), allowed(s, db)}).To(Equal([]bool{true, true, false}))
		Expect(s.Hosts(db).Rule).To(Equal(`deny.hosts ["select: env=prod or os=rhel and not role=web"]`))
	})

	DescribeTable("refuses a select entry that does not parse, naming the entry and the position",
		func(allow, deny *scope.Rules, want string) {
			_, err := scope.Compile(allow, deny, all)
			Expect(err).To(MatchError(scope.ErrRule))
			Expect(err).To(MatchError(ContainSubstring(want)))
		},
		Entry("unclosed", &scope.Rules{Hosts: []string{"role=web", "select: (os=debian"}}, nil, `hosts[1] "select: (os=debian": select: at 11: expected ')'`),
		Entry("empty", &scope.Rules{Hosts: []string{"select:"}}, nil, `hosts[0] "select:": select: at 1: empty expression`),
		Entry("deny side", nil, &scope.Rules{Hosts: []string{"select: a=1 b=2"}}, `deny.hosts[0] "select: a=1 b=2": select: at 5: expected 'and', 'or' or the end`),
		Entry("duplicate, once canonical", &scope.Rules{Hosts: []string{"select: a=1 or b=2", "select: (a=1) or (b=2)"}}, nil, `hosts[1] "select: a=1 or b=2": the same as hosts[0]`),
		Entry("shadowed by deny", &scope.Rules{Hosts: []string{"select: a=1 or b=2"}}, &scope.Rules{Hosts: []string{"select: a=1  or b=2"}}, "every host it allows is refused by deny.hosts"),
	)
})
