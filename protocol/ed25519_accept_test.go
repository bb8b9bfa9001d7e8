package protocol_test

import (
	"crypto/ed25519"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/nats-io/nkeys"
	"github.com/oasisprotocol/curve25519-voi/curve"
	"github.com/oasisprotocol/curve25519-voi/curve/scalar"
	voi "github.com/oasisprotocol/curve25519-voi/primitives/ed25519"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/protocol"
)

// sigCase is one (public key, message, signature) the implementations are
// asked about.
type sigCase struct {
	name string
	pub  []byte
	msg  []byte
	sig  []byte
}

// wycheproofPath is the vendored Wycheproof vector file (see its README).
const wycheproofPath = "testdata/wycheproof/ed25519_test.json"

func mustHex(s string) []byte {
	b, err := hex.DecodeString(s)
	Expect(err).NotTo(HaveOccurred(), "hex %q", s)
	return b
}

// rfc8032Cases are the Ed25519 test vectors of RFC 8032 section 7.1: seed,
// public key, message, signature.
func rfc8032Cases() []sigCase {
	vectors := []struct{ seed, pub, msg, sig string }{
		{"9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60", "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a", "",
			"e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"},
		{"4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb", "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c", "72",
			"92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00"},
		{"c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7", "fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025", "af82",
			"6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac18ff9b538d16f290ae67f760984dc6594a7c15e9716ed28dc027beceea1ec40a"},
	}
	var cases []sigCase
	for i, v := range vectors {
		priv := ed25519.NewKeyFromSeed(mustHex(v.seed))
		pub, msg, sig := mustHex(v.pub), mustHex(v.msg), mustHex(v.sig)
		Expect([]byte(priv.Public().(ed25519.PublicKey))).To(Equal(pub), "RFC 8032 test %d: public key", i+1)
		Expect(ed25519.Sign(priv, msg)).To(Equal(sig), "RFC 8032 test %d: signature", i+1)
		cases = append(cases, sigCase{name: fmt.Sprintf("RFC 8032 test %d", i+1), pub: pub, msg: msg, sig: sig})
	}
	return cases
}

// wycheproofCases reads the vendored Wycheproof file; it fails the spec
// when the file is missing, unreadable or holds no vectors.
func wycheproofCases() []sigCase {
	raw, err := os.ReadFile(wycheproofPath)
	Expect(err).NotTo(HaveOccurred(), "the Wycheproof ed25519 vectors must be present at %s", wycheproofPath)
	var file struct {
		Algorithm     string `json:"algorithm"`
		NumberOfTests int    `json:"numberOfTests"`
		TestGroups    []struct {
			PublicKey struct {
				Curve string `json:"curve"`
				PK    string `json:"pk"`
			} `json:"publicKey"`
			Tests []struct {
				TcID   int    `json:"tcId"`
				Msg    string `json:"msg"`
				Sig    string `json:"sig"`
				Result string `json:"result"`
			} `json:"tests"`
		} `json:"testGroups"`
	}
	Expect(json.Unmarshal(raw, &file)).To(Succeed(), "parse %s", wycheproofPath)
	Expect(file.Algorithm).To(Equal("EDDSA"))
	var cases []sigCase
	results := map[string]int{}
	for _, g := range file.TestGroups {
		Expect(g.PublicKey.Curve).To(Equal("edwards25519"))
		for _, t := range g.Tests {
			results[t.Result]++
			cases = append(cases, sigCase{
				name: fmt.Sprintf("Wycheproof tcId %d (%s)", t.TcID, t.Result),
				pub:  mustHex(g.PublicKey.PK), msg: mustHex(t.Msg), sig: mustHex(t.Sig),
			})
		}
	}
	Expect(cases).To(HaveLen(file.NumberOfTests), "every test of %s is read", wycheproofPath)
	Expect(len(cases)).To(BeNumerically(">=", 100), "%s holds the Wycheproof vectors", wycheproofPath)
	Expect(results["valid"]).To(BeNumerically(">", 0))
	Expect(results["invalid"]).To(BeNumerically(">", 0))
	return cases
}

// order8 is a point of order 8 (the torsion subgroup's generator).
const order8 = "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05"

func decodePoint(b []byte) *curve.EdwardsPoint {
	c, err := curve.NewCompressedEdwardsYFromBytes(b)
	Expect(err).NotTo(HaveOccurred())
	var p curve.EdwardsPoint
	_, err = p.SetCompressedY(c)
	Expect(err).NotTo(HaveOccurred(), "decode %x", b)
	return &p
}

func encodePoint(p *curve.EdwardsPoint) []byte {
	var c curve.CompressedEdwardsY
	c.SetEdwardsPoint(p)
	return append([]byte(nil), c[:]...)
}

// torsion returns the eight small-order points, [i]T for i in 0..7.
func torsion() []*curve.EdwardsPoint {
	t := decodePoint(mustHex(order8))
	points := []*curve.EdwardsPoint{curve.NewEdwardsPoint().Identity()}
	for i := 1; i < 8; i++ {
		points = append(points, curve.NewEdwardsPoint().Add(points[i-1], t))
	}
	seen := map[string]bool{}
	for _, p := range points {
		Expect(p.IsSmallOrder()).To(BeTrue())
		seen[string(encodePoint(p))] = true
	}
	Expect(seen).To(HaveLen(8), "the eight small-order points are distinct")
	return points
}

// specialEncodings are the 32-byte strings that decoders disagree about:
// the small-order points canonically and with the sign bit flipped, every
// non-canonical y (y+p for y < 19, both signs), and bytes that are not a
// point.
func specialEncodings() map[string][]byte {
	out := map[string][]byte{}
	for i, p := range torsion() {
		enc := encodePoint(p)
		out[fmt.Sprintf("small-order [%d]T", i)] = enc
		flipped := append([]byte(nil), enc...)
		flipped[31] ^= 0x80
		out[fmt.Sprintf("small-order [%d]T, sign flipped", i)] = flipped
	}
	for y := range 19 {
		enc := make([]byte, 32)
		enc[0] = byte(0xed + y)
		for i := 1; i < 31; i++ {
			enc[i] = 0xff
		}
		enc[31] = 0x7f
		out[fmt.Sprintf("non-canonical y=%d+p", y)] = enc
		signed := append([]byte(nil), enc...)
		signed[31] = 0xff
		out[fmt.Sprintf("non-canonical y=%d+p, sign set", y)] = signed
	}
	out["y=2, not a point"] = append([]byte{2}, make([]byte, 31)...)
	out["all ff"] = []byte("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff")
	return out
}

// hram is k = SHA-512(R || A || M) reduced modulo the group order.
func hram(r, a, msg []byte) *scalar.Scalar {
	h := sha512.New()
	h.Write(r)
	h.Write(a)
	h.Write(msg)
	k, err := scalar.NewFromBytesModOrderWide(h.Sum(nil))
	Expect(err).NotTo(HaveOccurred())
	return k
}

func scalarBytes(s *scalar.Scalar) []byte {
	out := make([]byte, 32)
	Expect(s.ToBytes(out)).To(Succeed())
	return out
}

// orderL is the group order L, little-endian.
var orderL = mustHexNoExpect("edd3f55c1a631258d69cf7a2def9de1400000000000000000000000000000010")

func mustHexNoExpect(s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

// addLE adds two 32-byte little-endian numbers, dropping the carry out.
func addLE(a, b []byte) []byte {
	out := make([]byte, 32)
	carry := 0
	for i := range 32 {
		v := int(a[i]) + int(b[i]) + carry
		out[i] = byte(v)
		carry = v >> 8
	}
	return out
}

// edgeCases are hand-made: small-order and non-canonical A and R against
// each other, S at and above the group order, mixed-order keys and R
// (valid under the cofactored equation only, or under both), bit flips
// and wrong lengths.
func edgeCases() []sigCase {
	var cases []sigCase
	add := func(name string, pub, msg, sig []byte) {
		cases = append(cases, sigCase{name: name, pub: pub, msg: msg, sig: sig})
	}
	msg := []byte(`{"protocol":"io.choria.ccm.v1.fleet.request","id":"edge"}`)
	special := specialEncodings()

	// Small-order and non-canonical encodings as A and as R, with S = 0
	// (the forgeries a small-order key admits), S = 1 and S = L.
	zero := make([]byte, 32)
	one := append([]byte{1}, make([]byte, 31)...)
	for an, a := range special {
		for rn, r := range special {
			for sn, s := range map[string][]byte{"0": zero, "1": one, "L": orderL} {
				add(fmt.Sprintf("A %s, R %s, S %s", an, rn, sn), a, msg, append(append([]byte(nil), r...), s...))
			}
		}
	}

	// A real key: its signature, S+L, S+2L... (non-canonical S), R with
	// every bit flipped in turn, the message changed.
	seed := sha512.Sum512([]byte("edge-case key"))
	priv := ed25519.NewKeyFromSeed(seed[:32])
	pub := []byte(priv.Public().(ed25519.PublicKey))
	good := ed25519.Sign(priv, msg)
	add("valid signature", pub, msg, good)
	s := good[32:]
	for i := 1; i <= 8; i++ {
		s = addLE(s, orderL)
		add(fmt.Sprintf("S + %dL", i), pub, msg, append(append([]byte(nil), good[:32]...), s...))
	}
	add("S with the top bit set", pub, msg, func() []byte {
		b := append([]byte(nil), good...)
		b[63] |= 0x80
		return b
	}())
	for bit := range 512 {
		b := append([]byte(nil), good...)
		b[bit/8] ^= 1 << (bit % 8)
		add(fmt.Sprintf("signature bit %d flipped", bit), pub, msg, b)
	}
	add("other message", pub, []byte("other"), good)
	for an, a := range special {
		add(fmt.Sprintf("valid signature under key %s", an), a, msg, good)
	}

	// Wrong signature lengths.
	add("empty signature", pub, msg, nil)
	add("63-byte signature", pub, msg, good[:63])
	add("65-byte signature", pub, msg, append(append([]byte(nil), good...), 0))
	add("128-byte signature", pub, msg, append(append([]byte(nil), good...), good...))
	add("32-byte signature", pub, msg, good[:32])

	// Mixed order: a key a·B + T and an R r·B + T, signed so that the
	// cofactored equation holds; crypto/ed25519 accepts only when the
	// torsion cancels (k·T = R's torsion).
	ts := torsion()
	var a scalar.Scalar
	h := sha512.Sum512(seed[:32])
	h[0] &= 248
	h[31] &= 127
	h[31] |= 64
	_, err := a.SetBits(h[:32])
	Expect(err).NotTo(HaveOccurred())
	aB := curve.NewEdwardsPoint().MulBasepoint(curve.ED25519_BASEPOINT_TABLE, &a)
	for i := range 40 {
		rSeed := sha512.Sum512(fmt.Appendf(nil, "nonce %d", i))
		r, err := scalar.NewFromBytesModOrderWide(rSeed[:])
		Expect(err).NotTo(HaveOccurred())
		rB := curve.NewEdwardsPoint().MulBasepoint(curve.ED25519_BASEPOINT_TABLE, r)
		for _, tk := range []int{1, 2, 4} {
			t := ts[tk]
			// mixed-order A, torsion-free R
			mixedA := encodePoint(curve.NewEdwardsPoint().Add(aB, t))
			rEnc := encodePoint(rB)
			k := hram(rEnc, mixedA, msg)
			sv := scalar.New().Add(r, scalar.New().Mul(k, &a))
			add(fmt.Sprintf("mixed-order A (+[%d]T), nonce %d", tk, i), mixedA, msg, append(rEnc, scalarBytes(sv)...))
			// torsion-free A, mixed-order R
			aEnc := encodePoint(aB)
			mixedR := encodePoint(curve.NewEdwardsPoint().Add(rB, t))
			k = hram(mixedR, aEnc, msg)
			sv = scalar.New().Add(r, scalar.New().Mul(k, &a))
			add(fmt.Sprintf("mixed-order R (+[%d]T), nonce %d", tk, i), aEnc, msg, append(mixedR, scalarBytes(sv)...))
			// both mixed-order, R's torsion chosen as -k·T_A so that
			// the cofactorless equation holds too
			for j := range 8 {
				mixedR = encodePoint(curve.NewEdwardsPoint().Add(rB, ts[j]))
				k = hram(mixedR, mixedA, msg)
				sv = scalar.New().Add(r, scalar.New().Mul(k, &a))
				add(fmt.Sprintf("mixed-order A (+[%d]T) and R (+[%d]T), nonce %d", tk, j, i), mixedA, msg, append(mixedR, scalarBytes(sv)...))
			}
		}
	}
	return cases
}

// verdicts is what each implementation says of one case.
type verdicts struct {
	stdlib, verify, cached bool
}

// judge asks crypto/ed25519, protocol.Verify and a protocol.Verifier about
// c, through the wire form (nkeys signer, base64 signature) for the latter
// two. A rejection must wrap ErrSignature.
func judge(v *protocol.Verifier, c sigCase) verdicts {
	var out verdicts
	out.stdlib = ed25519.Verify(c.pub, c.msg, c.sig)
	signer, err := nkeys.Encode(nkeys.PrefixByteUser, c.pub)
	Expect(err).NotTo(HaveOccurred())
	sig := base64.RawURLEncoding.EncodeToString(c.sig)
	if len(c.sig) == 0 {
		// an empty header is "no signature"; ask the same question
		// with one byte so the curve code decides
		sig = base64.RawURLEncoding.EncodeToString([]byte{0})
	}
	errVerify := protocol.Verify(c.msg, string(signer), sig)
	errCached := v.Verify(c.msg, string(signer), sig)
	for _, e := range []error{errVerify, errCached} {
		if e != nil {
			Expect(errors.Is(e, protocol.ErrSignature)).To(BeTrue(), "%s: %v wraps ErrSignature", c.name, e)
		}
	}
	out.verify, out.cached = errVerify == nil, errCached == nil
	return out
}

var _ = Describe("ed25519 acceptance", func() {
	var all []sigCase
	BeforeEach(func() {
		all = nil
		all = append(all, rfc8032Cases()...)
		all = append(all, wycheproofCases()...)
		all = append(all, edgeCases()...)
	})

	It("accepts and rejects exactly what crypto/ed25519 does, on every vector and edge case", func() {
		v := protocol.NewVerifier(64)
		var disagree []string
		accepted := 0
		for _, c := range all {
			got := judge(v, c)
			if got.stdlib {
				accepted++
			}
			if got.verify != got.stdlib || got.cached != got.stdlib {
				disagree = append(disagree, fmt.Sprintf("%s: crypto/ed25519 %v, Verify %v, Verifier %v", c.name, got.stdlib, got.verify, got.cached))
			}
		}
		GinkgoWriter.Printf("%d cases, %d accepted by crypto/ed25519\n", len(all), accepted)
		Expect(disagree).To(BeEmpty(), "%d of %d cases answered differently", len(disagree), len(all))
		// the cases exercise both answers, the mixed-order ones included
		Expect(accepted).To(BeNumerically(">", 100))
		Expect(len(all) - accepted).To(BeNumerically(">", 1000))
	})

	It("answers the same from a key seen once, a key expanded and a cached key, also after eviction", func() {
		v := protocol.NewVerifier(2)
		for _, c := range all[:200] {
			first := judge(v, c)  // unexpanded (unless the case's key is still cached)
			second := judge(v, c) // expanded now
			third := judge(v, c)  // from the cache
			Expect(second).To(Equal(first), c.name)
			Expect(third).To(Equal(first), c.name)
		}
		Expect(v.Len()).To(BeNumerically("<=", 2))
	})

	It("rejects a public key of the wrong length as a signer error, never a panic", func() {
		for _, n := range []int{0, 31, 33, 64} {
			signer, err := nkeys.Encode(nkeys.PrefixByteUser, make([]byte, n))
			Expect(err).NotTo(HaveOccurred())
			sig := base64.RawURLEncoding.EncodeToString(make([]byte, 64))
			Expect(errors.Is(protocol.Verify(nil, string(signer), sig), protocol.ErrSigner)).To(BeTrue(), "%d bytes", n)
			Expect(errors.Is(protocol.NewVerifier(1).Verify(nil, string(signer), sig), protocol.ErrSigner)).To(BeTrue(), "%d bytes", n)
		}
	})

	It("signs exactly as crypto/ed25519 does", func() {
		for i := range 64 {
			seed := sha512.Sum512(fmt.Appendf(nil, "signing key %d", i))
			kp, err := nkeys.FromRawSeed(nkeys.PrefixByteUser, seed[:32])
			Expect(err).NotTo(HaveOccurred())
			ks, err := protocol.NewKeySigner(kp)
			Expect(err).NotTo(HaveOccurred())
			body := fmt.Appendf(nil, "body %d %s", i, seed[32:])
			want := ed25519.Sign(ed25519.NewKeyFromSeed(seed[:32]), body)
			Expect(ks.Sign(body)).To(Equal(base64.RawURLEncoding.EncodeToString(want)))
		}
	})

	// Batch verification checks the cofactored equation. These specs pin
	// down why the orchestrator does not use it: with crypto/ed25519's
	// options the library never trusts a batch (every entry is checked
	// one by one, so a batch accept implies every single accept), and with
	// the cofactored options a batch accepts signatures crypto/ed25519
	// rejects.
	It("never accepts in a batch, with crypto/ed25519's options, what a single check rejects", func() {
		seed := sha512.Sum512([]byte("batch key"))
		priv := ed25519.NewKeyFromSeed(seed[:32])
		goodMsg := []byte("good")
		good := sigCase{name: "good", pub: priv.Public().(ed25519.PublicKey), msg: goodMsg, sig: ed25519.Sign(priv, goodMsg)}
		opts := &voi.Options{Verify: voi.VerifyOptionsStdLib}
		var wrong []string
		for _, c := range all {
			if len(c.pub) != ed25519.PublicKeySize {
				continue
			}
			b := voi.NewBatchVerifier()
			for _, e := range []sigCase{good, c, good} {
				b.AddWithOptions(e.pub, e.msg, e.sig, opts)
			}
			ok, each := b.Verify(nil)
			single := ed25519.Verify(c.pub, c.msg, c.sig)
			if ok && !single || each[1] != single || !each[0] || !each[2] {
				wrong = append(wrong, fmt.Sprintf("%s: batch %v %v, single %v", c.name, ok, each, single))
			}
		}
		Expect(wrong).To(BeEmpty())
	})

	It("shows the cofactored batch accepting signatures crypto/ed25519 rejects", func() {
		cofactored := &voi.Options{Verify: voi.VerifyOptionsFIPS_186_5}
		var loose []string
		for _, c := range all {
			if len(c.pub) != ed25519.PublicKeySize || ed25519.Verify(c.pub, c.msg, c.sig) {
				continue
			}
			b := voi.NewBatchVerifier()
			b.AddWithOptions(c.pub, c.msg, c.sig, cofactored)
			if b.VerifyBatchOnly(nil) {
				loose = append(loose, c.name)
			}
		}
		GinkgoWriter.Printf("the cofactored batch accepts %d cases crypto/ed25519 rejects, e.g. %v\n", len(loose), loose[:min(3, len(loose))])
		Expect(loose).To(ContainElement(ContainSubstring("mixed-order R")))
	})
})
