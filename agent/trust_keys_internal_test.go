package agent

import (
	"fmt"
	"path/filepath"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/broker/brokertest"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/providers"
	"github.com/ccm-fleet/ccm/resources/engine"
)

var _ = Describe("The authenticator's signer key cache", func() {
	newSigner := func() (nkeys.KeyPair, string) {
		kp, err := nkeys.CreateUser()
		Expect(err).ToNot(HaveOccurred())
		pub, err := kp.PublicKey()
		Expect(err).ToNot(HaveOccurred())
		return kp, pub
	}
	sign := func(kp nkeys.KeyPair, data []byte) (string, string) {
		signer, sig, err := protocol.Sign(data, kp)
		Expect(err).ToNot(HaveOccurred())
		return signer, sig
	}

	It("is the agent's: the pipeline verifies with one cached key per signer and answers as before", func() {
		kp, pub := newSigner()
		policy, err := ParsePolicy([]byte("signers:\n  - name: ops\n    public_key: " + pub + "\n    allow: [file, exec]\n"))
		Expect(err).ToNot(HaveOccurred())
		b := brokertest.Start(GinkgoT())
		nc, err := nats.Connect(b.ClientURL())
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(nc.Close)
		reg, err := providers.Builtin(providers.Options{})
		Expect(err).ToNot(HaveOccurred())
		a, err := New(Config{Identity: "keys-1", StateDir: filepath.Join(GinkgoT().TempDir(), "state")}, nc, engine.New(reg), map[string]any{"os": "debian"}, WithPolicy(policy))
		Expect(err).ToNot(HaveOccurred())
		auth, ok := a.gate.auth.(trust)
		Expect(ok).To(BeTrue())
		Expect(auth.keys).NotTo(BeNil(), "the agent verifies with a key cache")

		for i := range 3 {
			data := fmt.Appendf(nil, `{"id":"k%d"}`, i)
			signer, sig := sign(kp, data)
			s, signed, e := a.gate.auth.authenticate(data, signer, sig)
			Expect(e).To(BeNil())
			Expect(signed).To(BeTrue())
			Expect(s.Name).To(Equal("ops"))
			_, signed, e = a.gate.auth.authenticate(append(data, ' '), signer, sig)
			Expect(signed).To(BeFalse())
			Expect(e).NotTo(BeNil())
			Expect(e.Code).To(Equal(protocol.CodeUnauthenticated))
			// the same words as the uncached check
			_, _, want := trust{policy: policy}.authenticate(append(data, ' '), signer, sig)
			Expect(e.Message).To(Equal(want.Message))
		}
		Expect(auth.keys.Len()).To(Equal(1), "one signer, one cached key")
	})

	It("stays bounded when many unknown keys sign", func() {
		_, pub := newSigner()
		t := trust{policy: &Policy{Signers: []Signer{{Name: "ops", PublicKey: pub}}}, keys: protocol.NewVerifier(signerKeys)}
		data := []byte(`{"id":"flood"}`)
		for range signerKeys + 20 {
			kp, _ := newSigner()
			signer, sig := sign(kp, data)
			_, signed, e := t.authenticate(data, signer, sig)
			Expect(signed).To(BeTrue())
			Expect(e).NotTo(BeNil(), "an unlisted signer is refused")
			Expect(e.Message).To(ContainSubstring("not trusted"))
		}
		Expect(t.keys.Len()).To(Equal(signerKeys))
	})
})
