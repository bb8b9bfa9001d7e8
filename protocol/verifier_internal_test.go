package protocol

import (
	"encoding/base64"
	"errors"
	"fmt"
	"sync"

	"github.com/nats-io/nkeys"
	voi "github.com/oasisprotocol/curve25519-voi/primitives/ed25519"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("Verifier's key cache", func() {
	type signed struct {
		signer, sig, bad string
		raw              [32]byte
		body             []byte
	}
	newSigned := func(i int) signed {
		kp, err := nkeys.CreateUser()
		Expect(err).NotTo(HaveOccurred())
		ks, err := NewKeySigner(kp)
		Expect(err).NotTo(HaveOccurred())
		body := fmt.Appendf(nil, `{"n":%d}`, i)
		raw, err := userKeyBytes(ks.PublicKey())
		Expect(err).NotTo(HaveOccurred())
		return signed{signer: ks.PublicKey(), sig: ks.Sign(body), bad: ks.Sign(append(body, ' ')), raw: raw, body: body}
	}
	cached := func(v *Verifier, raw [32]byte) bool {
		v.mu.Lock()
		defer v.mu.Unlock()
		_, ok := v.keys[raw]
		return ok
	}

	It("keeps one entry per public key and evicts the one used least recently", func() {
		v := NewVerifier(2)
		a, b, c := newSigned(1), newSigned(2), newSigned(3)
		Expect(v.Verify(a.body, a.signer, a.sig)).To(Succeed())
		Expect(v.Verify(a.body, a.signer, a.sig)).To(Succeed())
		Expect(v.Len()).To(Equal(1))
		Expect(v.Verify(b.body, b.signer, b.sig)).To(Succeed())
		Expect(v.Verify(a.body, a.signer, a.sig)).To(Succeed()) // a is now the most recent
		Expect(v.Verify(c.body, c.signer, c.sig)).To(Succeed())
		Expect(v.Len()).To(Equal(2))
		Expect(cached(v, a.raw)).To(BeTrue())
		Expect(cached(v, b.raw)).To(BeFalse(), "b was used least recently")
		Expect(cached(v, c.raw)).To(BeTrue())
		// an evicted key still verifies, and comes back
		Expect(v.Verify(b.body, b.signer, b.sig)).To(Succeed())
		Expect(cached(v, b.raw)).To(BeTrue())
		Expect(v.Len()).To(Equal(2))
	})

	It("expands a key on its second signature, not its first", func() {
		expanded := func(v *Verifier, raw [32]byte) bool {
			v.mu.Lock()
			defer v.mu.Unlock()
			e, ok := v.keys[raw]
			return ok && e.Value.(*verifierKey).expanded != nil
		}
		v := NewVerifier(4)
		a := newSigned(1)
		Expect(v.Verify(a.body, a.signer, a.sig)).To(Succeed())
		Expect(cached(v, a.raw)).To(BeTrue())
		Expect(expanded(v, a.raw)).To(BeFalse(), "seen once")
		Expect(v.Verify(a.body, a.signer, a.bad)).To(MatchError(ErrSignature))
		Expect(expanded(v, a.raw)).To(BeTrue(), "seen twice, the second time with a wrong signature")
		Expect(v.Verify(a.body, a.signer, a.sig)).To(Succeed())
		Expect(v.Verify(a.body, a.signer, a.bad)).To(MatchError(ErrSignature))
		Expect(v.Len()).To(Equal(1))
	})

	It("forgets a key that is not a point once it has tried to expand it, and keeps rejecting it", func() {
		var raw [32]byte
		for raw[0] = 2; ; raw[0]++ { // a y with no x on the curve
			if _, err := voi.NewExpandedPublicKey(raw[:]); err != nil {
				break
			}
		}
		signer, err := nkeys.Encode(nkeys.PrefixByteUser, raw[:])
		Expect(err).NotTo(HaveOccurred())
		sig := make([]byte, 64)
		v := NewVerifier(4)
		for i := range 3 {
			Expect(v.Verify([]byte("x"), string(signer), b64(sig))).To(MatchError(ErrSignature), "try %d", i)
			Expect(Verify([]byte("x"), string(signer), b64(sig))).To(MatchError(ErrSignature))
		}
		Expect(v.Len()).To(Equal(1), "remembered again on the third try, after it was dropped on the second")
	})

	It("caches a key that a wrong signature named, and still rejects the signature", func() {
		v := NewVerifier(4)
		a := newSigned(1)
		Expect(v.Verify(a.body, a.signer, a.bad)).To(MatchError(ErrSignature))
		Expect(v.Verify(a.body, a.signer, a.sig)).To(Succeed())
		Expect(v.Verify(a.body, a.signer, a.bad)).To(MatchError(ErrSignature))
	})

	It("gives the errors of Verify for a bad signer or signature header", func() {
		v := NewVerifier(1)
		a := newSigned(1)
		for _, c := range []struct{ signer, sig string }{
			{"", a.sig}, {"Unot-a-key", a.sig}, {a.signer, ""}, {a.signer, "!!!"},
			{a.signer, string(make([]byte, MaxSignatureLength+1))},
		} {
			want := Verify(a.body, c.signer, c.sig)
			got := v.Verify(a.body, c.signer, c.sig)
			Expect(want).To(HaveOccurred())
			Expect(got).To(MatchError(want.Error()))
			Expect(errorsIs(got, ErrSigner)).To(Equal(errorsIs(want, ErrSigner)))
			Expect(errorsIs(got, ErrSignature)).To(Equal(errorsIs(want, ErrSignature)))
		}
		Expect(v.Len()).To(BeZero())
	})

	It("is safe for concurrent use while it evicts", func() {
		v := NewVerifier(3)
		keys := make([]signed, 6)
		for i := range keys {
			keys[i] = newSigned(i)
		}
		var wg sync.WaitGroup
		errs := make(chan error, 8*60)
		for g := range 8 {
			wg.Go(func() {
				for i := range 60 {
					k := keys[(g+i)%len(keys)]
					if err := v.Verify(k.body, k.signer, k.sig); err != nil {
						errs <- fmt.Errorf("good signature of key %d rejected: %w", (g+i)%len(keys), err)
					}
					if v.Verify(k.body, k.signer, k.bad) == nil {
						errs <- fmt.Errorf("bad signature of key %d accepted", (g+i)%len(keys))
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		Expect(errs).To(BeEmpty())
		Expect(v.Len()).To(Equal(3))
	})
})

func errorsIs(err, target error) bool { return errors.Is(err, target) }

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }
