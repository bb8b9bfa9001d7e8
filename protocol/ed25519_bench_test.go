package protocol_test

import (
	"crypto/ed25519"
	"crypto/sha512"
	"encoding/base64"
	"fmt"
	"testing"

	"github.com/nats-io/nkeys"
	"github.com/oasisprotocol/curve25519-voi/curve"
	voi "github.com/oasisprotocol/curve25519-voi/primitives/ed25519"

	"github.com/ccm-fleet/ccm/protocol"
)

// benchMessage is the size of a typical signed request or reply.
const benchMessage = 1500

type benchKey struct {
	kp     nkeys.KeyPair
	signer string
	priv   ed25519.PrivateKey
	pub    ed25519.PublicKey
	body   []byte
	sig    []byte
	sigB64 string
}

func newBenchKey(b *testing.B, i int) benchKey {
	b.Helper()
	seed := sha512.Sum512(fmt.Appendf(nil, "bench key %d", i))
	kp, err := nkeys.FromRawSeed(nkeys.PrefixByteUser, seed[:32])
	if err != nil {
		b.Fatal(err)
	}
	signer, err := kp.PublicKey()
	if err != nil {
		b.Fatal(err)
	}
	priv := ed25519.NewKeyFromSeed(seed[:32])
	body := make([]byte, benchMessage)
	for j := range body {
		body[j] = byte(i + j)
	}
	sig := ed25519.Sign(priv, body)
	return benchKey{kp: kp, signer: signer, priv: priv, pub: priv.Public().(ed25519.PublicKey), body: body, sig: sig, sigB64: base64.RawURLEncoding.EncodeToString(sig)}
}

// BenchmarkVerify compares one signature check: the previous path
// (nkeys key parsed, crypto/ed25519), protocol.Verify, and a
// protocol.Verifier whose key is cached; the raw libraries for reference.
func BenchmarkVerify(b *testing.B) {
	k := newBenchKey(b, 0)
	b.Run("before_nkeys_stdlib", func(b *testing.B) {
		for b.Loop() {
			kp, err := protocol.ParseUserKey(k.signer)
			if err != nil {
				b.Fatal(err)
			}
			sig, err := base64.RawURLEncoding.DecodeString(k.sigB64)
			if err != nil || kp.Verify(k.body, sig) != nil {
				b.Fatal("rejected")
			}
		}
	})
	b.Run("after_protocol_Verify", func(b *testing.B) {
		for b.Loop() {
			if err := protocol.Verify(k.body, k.signer, k.sigB64); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("after_Verifier_cached_key", func(b *testing.B) {
		v := protocol.NewVerifier(16)
		for b.Loop() {
			if err := v.Verify(k.body, k.signer, k.sigB64); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("after_Verifier_key_never_cached", func(b *testing.B) {
		// every signer new to the cache: the cost of a one-off reply
		keys := make([]benchKey, 64)
		for i := range keys {
			keys[i] = newBenchKey(b, i)
		}
		v := protocol.NewVerifier(1)
		i := 0
		for b.Loop() {
			k := keys[i%len(keys)]
			i++
			if err := v.Verify(k.body, k.signer, k.sigB64); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("lib_stdlib", func(b *testing.B) {
		for b.Loop() {
			if !ed25519.Verify(k.pub, k.body, k.sig) {
				b.Fatal("rejected")
			}
		}
	})
	b.Run("lib_voi_stdlib_options", func(b *testing.B) {
		opts := &voi.Options{Verify: voi.VerifyOptionsStdLib}
		for b.Loop() {
			if !voi.VerifyWithOptions(voi.PublicKey(k.pub), k.body, k.sig, opts) {
				b.Fatal("rejected")
			}
		}
	})
}

// BenchmarkBatchVerify is the cost per signature of curve25519-voi's batch
// verification (cofactored, which is why it is not used), for comparison
// with BenchmarkVerify; ns/op is per signature.
func BenchmarkBatchVerify(b *testing.B) {
	for _, n := range []int{64, 256} {
		keys := make([]benchKey, n)
		expanded := make([]*voi.ExpandedPublicKey, n)
		for i := range keys {
			keys[i] = newBenchKey(b, i)
			var err error
			if expanded[i], err = voi.NewExpandedPublicKey(voi.PublicKey(keys[i].pub)); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(fmt.Sprintf("cofactored_batch_%d_per_signature", n), func(b *testing.B) {
			opts := &voi.Options{Verify: voi.VerifyOptionsFIPS_186_5}
			b.ResetTimer()
			for i := 0; i < b.N; i += n {
				bv := voi.NewBatchVerifierWithCapacity(n)
				for j, k := range keys {
					bv.AddExpandedWithOptions(expanded[j], k.body, k.sig, opts)
				}
				if !bv.VerifyBatchOnly(nil) {
					b.Fatal("batch rejected")
				}
			}
		})
	}
}

// BenchmarkTorsionCheck is what one signature's R would cost to prove free
// of a small-order component, the check that would make a cofactored batch
// answer like crypto/ed25519 (compare with the batch's saving per
// signature).
func BenchmarkTorsionCheck(b *testing.B) {
	k := newBenchKey(b, 0)
	c, err := curve.NewCompressedEdwardsYFromBytes(k.sig[:32])
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		var r curve.EdwardsPoint
		if _, err := r.SetCompressedY(c); err != nil {
			b.Fatal(err)
		}
		if !r.IsTorsionFree() {
			b.Fatal("R of a real signature has a small-order component")
		}
	}
}

// BenchmarkSign compares signing a message: the previous KeySigner
// (crypto/ed25519) and the current one.
func BenchmarkSign(b *testing.B) {
	k := newBenchKey(b, 0)
	b.Run("before_stdlib", func(b *testing.B) {
		for b.Loop() {
			_ = base64.RawURLEncoding.EncodeToString(ed25519.Sign(k.priv, k.body))
		}
	})
	b.Run("after_KeySigner", func(b *testing.B) {
		s, err := protocol.NewKeySigner(k.kp)
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			_ = s.Sign(k.body)
		}
	})
}
