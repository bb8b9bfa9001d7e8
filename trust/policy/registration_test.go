package policy_test

import (
	"fmt"

	"github.com/nats-io/nkeys"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/trust/policy"
)

var _ = Describe("registration.services", func() {
	parse := func(extra string) (*policy.Policy, error) {
		kp, _ := nkeys.CreateUser()
		pub, _ := kp.PublicKey()
		return policy.ParsePolicy(fmt.Appendf(nil, "signers:\n  - name: ops\n    public_key: %s\n    allow: [file]\n%s", pub, extra))
	}

	It("allows the listed services only", func() {
		p, err := parse("    registration:\n      services: [web, api]\n")
		Expect(err).NotTo(HaveOccurred())
		s := &p.Signers[0]
		Expect(s.CheckRegistration("web").Allowed).To(BeTrue())
		d := s.CheckRegistration("db")
		Expect(d.Allowed).To(BeFalse())
		Expect(d.String()).To(Equal(`denied registration.services "db" by registration.services [web, api]: the service is not listed`))
	})

	It("allows nothing without registration.services, everything with *", func() {
		p, err := parse("")
		Expect(err).NotTo(HaveOccurred())
		Expect(p.Signers[0].CheckRegistration("web").Allowed).To(BeFalse())
		p, err = parse("    registration:\n      services: [\"*\"]\n")
		Expect(err).NotTo(HaveOccurred())
		Expect(p.Signers[0].CheckRegistration("web").Allowed).To(BeTrue())
	})

	It("judges the host's own manifests by the top-level registration.services, nothing without it", func() {
		p, err := parse("")
		Expect(err).NotTo(HaveOccurred())
		d := p.CheckLocalRegistration("web")
		Expect(d.Allowed).To(BeFalse())
		Expect(d.String()).To(Equal(`denied registration.services "web" by registration.services (none): this host's own manifests may not register services`))
		p, err = parse("registration:\n  services: [web]\n")
		Expect(err).NotTo(HaveOccurred())
		Expect(p.CheckLocalRegistration("web").Allowed).To(BeTrue())
		Expect(p.CheckLocalRegistration("db").Allowed).To(BeFalse())
		_, err = parse("registration:\n  services: [web.prod]\n")
		Expect(err).To(MatchError(policy.ErrPolicy))
		Expect(err.Error()).To(ContainSubstring(`registration.services[0] "web.prod"`))
	})

	It("refuses a service name CCM would refuse", func() {
		_, err := parse("    registration:\n      services: [web.prod]\n")
		Expect(err).To(MatchError(policy.ErrPolicy))
		Expect(err.Error()).To(ContainSubstring("registration.services[0]"))
	})
})

var _ = Describe("registration.publishers", func() {
	It("pins hosts' registration keys at the top level, and refuses them in a signer or malformed", func() {
		kp, _ := nkeys.CreateUser()
		pub, _ := kp.PublicKey()
		p, err := policy.ParsePolicy(fmt.Appendf(nil, "registration:\n  services: [web]\n  publishers:\n    - {host: web1, public_key: %s}\n    - {host: web2.example.com, public_key: %s}\n", pub, pub))
		Expect(err).NotTo(HaveOccurred())
		Expect(p.RegistrationPublishers()).To(Equal(map[string][]string{"web1": {pub}, "web2.example.com": {pub}}))
		Expect((&policy.Policy{}).RegistrationPublishers()).To(BeNil())

		_, err = policy.ParsePolicy(fmt.Appendf(nil, "signers:\n  - name: ops\n    public_key: %s\n    allow: [file]\n    registration:\n      services: [web]\n      publishers: [{host: web1, public_key: %s}]\n", pub, pub))
		Expect(err).To(MatchError(ContainSubstring("registration.publishers is the policy's own (top level), not a signer's")))
		_, err = policy.ParsePolicy(fmt.Appendf(nil, "registration:\n  services: [web]\n  publishers: [{host: \"web1;x\", public_key: %s}]\n", pub))
		Expect(err).To(MatchError(ContainSubstring("registration.publishers[0].host")))
		_, err = policy.ParsePolicy([]byte("registration:\n  services: [web]\n  publishers: [{host: web1, public_key: NOTAKEY}]\n"))
		Expect(err).To(MatchError(ContainSubstring("registration.publishers[0].public_key")))
	})
})
