package policy_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/trust/policy"
)

var _ = Describe("Signer.AllowsResource and shell providers", func() {
	DescribeTable("needs shell: true only for a provider the catalog says runs a shell",
		func(r policy.Resource, allowed bool) {
			key := userKey()
			p, err := policy.ParsePolicy([]byte("signers:\n  - name: ops\n    public_key: " + key + "\n    allow: [file, exec]\n"))
			Expect(err).NotTo(HaveOccurred())
			s, ok := p.SignerByKey(key)
			Expect(ok).To(BeTrue())
			refusal, ok := s.AllowsResource(r)
			Expect(ok).To(Equal(allowed))
			if !allowed {
				Expect(refusal.Rule).To(Equal("shell: false"))
				Expect(refusal.Value).To(Equal(r.Provider))
			}
		},
		Entry("exec with the shell provider", policy.Resource{Type: "exec", Name: "/bin/true", Provider: "shell"}, false),
		Entry("exec with a provider not known before templates", policy.Resource{Type: "exec", Name: "/bin/true", Provider: "*"}, false),
		Entry("exec with posix", policy.Resource{Type: "exec", Name: "/bin/true", Provider: "posix"}, true),
		Entry("exec with no provider", policy.Resource{Type: "exec", Name: "/bin/true"}, true),
		Entry("file, whatever its provider", policy.Resource{Type: "file", Name: "/tmp/x", Provider: "posix"}, true),
	)
})
