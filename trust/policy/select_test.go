package policy_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/trust/policy"
)

var _ = Describe("a policy's hosts select entries", func() {
	It("loads a quoted select entry beside --where terms", func() {
		p, err := policy.ParsePolicy([]byte("signers:\n  - name: ops\n    public_key: " + userKey() + "\n    allow: [file]\n    hosts:\n      - env!=staging\n      - \"select: (os=debian and role=web) or role=db\"\n"))
		Expect(err).ToNot(HaveOccurred())
		Expect([]string(p.Signers[0].Hosts)).To(Equal([]string{"env!=staging", "select: (os=debian and role=web) or role=db"}))
	})

	It("refuses a select entry that does not parse, naming the signer, the entry and the position", func() {
		_, err := policy.ParsePolicy([]byte("signers:\n  - name: ops\n    public_key: " + userKey() + "\n    allow: [file]\n    hosts: [\"select: (os=debian and role=web\"]\n"))
		Expect(err).To(MatchError(policy.ErrPolicy))
		Expect(err).To(MatchError(ContainSubstring(`hosts[0] "select: (os=debian and role=web": select: at 24: expected ')'`)))
	})

	It("reads an unquoted select (a YAML mapping) as the same entry", func() {
		p, err := policy.ParsePolicy([]byte("signers:\n  - name: ops\n    public_key: " + userKey() + "\n    allow: [file]\n    hosts:\n      - env!=staging\n      - select: (os=debian and role=web) or role=db\n"))
		Expect(err).ToNot(HaveOccurred())
		Expect([]string(p.Signers[0].Hosts)).To(Equal([]string{"env!=staging", "select: (os=debian and role=web) or role=db"}))
		allowed := func(facts map[string]any) bool {
			ds := p.Signers[0].CheckRequest(false, facts)
			Expect(ds).To(HaveLen(1))
			return ds[0].Allowed
		}
		Expect(allowed(map[string]any{"os": "debian", "role": "web"})).To(BeTrue())
		Expect(allowed(map[string]any{"os": "rhel", "role": "db"})).To(BeTrue())
		Expect(allowed(map[string]any{"os": "rhel", "role": "web"})).To(BeFalse())
		Expect(allowed(map[string]any{"os": "rhel", "role": "db", "env": "staging"})).To(BeFalse())
	})

	DescribeTable("refuses any other shape of entry, naming it",
		func(entries, want string) {
			_, err := policy.ParsePolicy([]byte("signers:\n  - name: ops\n    public_key: " + userKey() + "\n    allow: [file]\n    hosts:\n" + entries))
			Expect(err).To(MatchError(policy.ErrPolicy))
			Expect(err.Error()).To(ContainSubstring(want))
		},
		Entry("another key", "      - role=web\n      - where: role=web\n", `signers[0].hosts[1].where: unknown key "where": a mapping must be {select: EXPR}`),
		Entry("two keys", "      - select: role=web\n        also: x\n", `signers[0].hosts[0].also: unknown key "also": a mapping must be {select: EXPR}`),
		Entry("a list as the expression", "      - select: [role=web]\n", `signers[0].hosts[0].select: expected an expression (a string), got a list`),
		Entry("a number", "      - 42\n", `signers[0].hosts: item 0: expected a --where term or select: EXPR, got a number`),
		Entry("not a list", "      role=web\n", `signers[0].hosts: expected a list of --where terms and select: entries`),
		Entry("a mapping's select that does not parse", "      - select: role=web or\n", `hosts[0] "select: role=web or": select: at 12: expected a term`),
	)
})
