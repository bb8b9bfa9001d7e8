package policy_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/agent/policy"
)

var _ = Describe("a policy's hosts select entries", func() {
	It("loads a quoted select entry beside --where terms", func() {
		p, err := policy.ParsePolicy([]byte("signers:\n  - name: ops\n    public_key: " + userKey() + "\n    allow: [file]\n    hosts:\n      - env!=staging\n      - \"select: (os=debian and role=web) or role=db\"\n"))
		Expect(err).ToNot(HaveOccurred())
		Expect(p.Signers[0].Hosts).To(Equal([]string{"env!=staging", "select: (os=debian and role=web) or role=db"}))
	})

	It("refuses a select entry that does not parse, naming the signer, the entry and the position", func() {
		_, err := policy.ParsePolicy([]byte("signers:\n  - name: ops\n    public_key: " + userKey() + "\n    allow: [file]\n    hosts: [\"select: (os=debian and role=web\"]\n"))
		Expect(err).To(MatchError(policy.ErrPolicy))
		Expect(err).To(MatchError(ContainSubstring(`hosts[0] "select: (os=debian and role=web": select: at 24: expected ')'`)))
	})

	It("refuses an unquoted select (a YAML mapping), naming the entry", func() {
		_, err := policy.ParsePolicy([]byte("signers:\n  - name: ops\n    public_key: " + userKey() + "\n    allow: [file]\n    hosts:\n      - select: role=web or role=db\n"))
		Expect(err).To(MatchError(policy.ErrPolicy))
		Expect(err.Error()).To(ContainSubstring("signers[0].hosts[0]: expected a string, got object"))
	})
})
