package protocol

import (
	"container/list"
	"encoding/base64"
	"fmt"
	"sync"

	"github.com/nats-io/nkeys"
	voi "github.com/oasisprotocol/curve25519-voi/primitives/ed25519"
)

// The ed25519 implementation behind Sign, Verify and Verifier is
// curve25519-voi, which signs and verifies about 1.6 times faster than
// crypto/ed25519. It is used only with the options that accept and reject
// exactly what crypto/ed25519 does (canonical S below the group order, any
// decodable A including non-canonical and small-order encodings, R compared
// byte for byte with the canonical encoding of [S]B - [k]A, the
// cofactorless equation); the acceptance test of this package runs both
// implementations over the RFC 8032 and Wycheproof vectors and the known
// edge cases and requires the same answer for every one.
//
// Batch verification is not used: a batch checks the cofactored equation,
// which accepts signatures whose R or A carries a small-order component
// that crypto/ed25519 rejects, and the check that would rule those out per
// signature costs more than the batch saves.
var stdlibOptions = &voi.Options{Verify: voi.VerifyOptionsStdLib}

// userKeyBytes decodes an nkeys user public key ("U...") into its ed25519
// public key; anything else is a SignerError, as ParseUserKey says.
func userKeyBytes(pub string) ([voi.PublicKeySize]byte, error) {
	var raw [voi.PublicKeySize]byte
	if pub == "" {
		return raw, signerError("no public key")
	}
	if len(pub) > 64 {
		return raw, signerError("%.60q is not an nkeys user public key", pub)
	}
	b, err := nkeys.Decode(nkeys.PrefixByteUser, []byte(pub))
	if err != nil || len(b) != voi.PublicKeySize {
		return raw, signerError("%.60q is not an nkeys user public key", pub)
	}
	copy(raw[:], b)
	return raw, nil
}

// decodeSignature checks and decodes the value of HeaderSignature; its
// errors wrap ErrSignature.
func decodeSignature(signature string) ([]byte, error) {
	if signature == "" {
		return nil, fmt.Errorf("%w: no signature", ErrSignature)
	}
	if len(signature) > MaxSignatureLength {
		return nil, fmt.Errorf("%w: %d characters, the limit is %d", ErrSignature, len(signature), MaxSignatureLength)
	}
	sig, err := base64.RawURLEncoding.DecodeString(signature)
	if err != nil {
		return nil, fmt.Errorf("%w: not base64 raw-URL", ErrSignature)
	}
	return sig, nil
}

// errMismatch is the error of a well-formed signature that is not the
// signer's over the body.
func errMismatch() error {
	return fmt.Errorf("%w: does not match the body and the signer", ErrSignature)
}

// verifyKey reports whether sig is the signature of body by the ed25519
// public key pub, with crypto/ed25519's acceptance.
func verifyKey(pub []byte, body, sig []byte) bool {
	return voi.VerifyWithOptions(pub, body, sig, stdlibOptions)
}

// verifyExpanded is verifyKey with the public key expanded beforehand.
func verifyExpanded(pub *voi.ExpandedPublicKey, body, sig []byte) bool {
	return voi.VerifyExpandedWithOptions(pub, body, sig, stdlibOptions)
}

// DefaultVerifierKeys is the number of expanded public keys a Verifier
// made with a capacity of zero or less keeps.
const DefaultVerifierKeys = 1024

// Verifier checks signatures like Verify and keeps the expanded form of
// the public keys it has seen more than once (about 1.5 KiB each), so that
// the next signature of the same signer costs less: a cache bounded by its
// capacity that evicts the key used least recently. A key is expanded only
// on its second signature: expanding costs about a fifth of a verification
// (more in a loaded process: its allocation and the collector's work on
// it), which a signer heard from once (each host's reply to a one-off
// ccm-orch) never earns back. It is safe for concurrent use.
type Verifier struct {
	capacity int
	// guards keys and order
	mu sync.Mutex
	// keys maps a public key to its element in order, whose value is a
	// *verifierKey
	keys map[[voi.PublicKeySize]byte]*list.Element
	// order holds the keys, the most recently used at the front
	order *list.List
}

// verifierKey is one public key the cache remembers.
type verifierKey struct {
	raw [voi.PublicKeySize]byte
	// expanded is nil until the key's second signature
	expanded *voi.ExpandedPublicKey
}

// NewVerifier returns a Verifier that keeps up to capacity expanded keys
// (DefaultVerifierKeys when capacity is zero or less).
func NewVerifier(capacity int) *Verifier {
	if capacity <= 0 {
		capacity = DefaultVerifierKeys
	}
	return &Verifier{capacity: capacity, keys: make(map[[voi.PublicKeySize]byte]*list.Element), order: list.New()}
}

// Verify checks that signature (base64 raw-URL) is signer's signature of
// the exact bytes of body, with the answers and errors of the package's
// Verify.
func (v *Verifier) Verify(body []byte, signer, signature string) error {
	raw, err := userKeyBytes(signer)
	if err != nil {
		return err
	}
	sig, err := decodeSignature(signature)
	if err != nil {
		return err
	}
	key, seen := v.key(raw)
	var ok bool
	switch {
	case !seen:
		ok = verifyKey(raw[:], body, sig)
	case key == nil:
		// not a point of the curve: crypto/ed25519 rejects every
		// signature of it
	default:
		ok = verifyExpanded(key, body, sig)
	}
	if !ok {
		return errMismatch()
	}
	return nil
}

// Len is the number of keys the Verifier holds.
func (v *Verifier) Len() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.order.Len()
}

// key returns the expanded form of raw and true when raw was seen before
// (expanding it now if it was seen once); nil and true when raw is not a
// point, which is forgotten again. A key seen for the first time is
// remembered unexpanded, and key returns nil and false.
func (v *Verifier) key(raw [voi.PublicKeySize]byte) (*voi.ExpandedPublicKey, bool) {
	v.mu.Lock()
	e, ok := v.keys[raw]
	if !ok {
		v.rememberLocked(raw)
		v.mu.Unlock()
		return nil, false
	}
	v.order.MoveToFront(e)
	if k := e.Value.(*verifierKey).expanded; k != nil {
		v.mu.Unlock()
		return k, true
	}
	v.mu.Unlock()
	expanded, err := voi.NewExpandedPublicKey(raw[:])
	v.mu.Lock()
	defer v.mu.Unlock()
	e, ok = v.keys[raw]
	switch {
	case err != nil:
		if ok {
			v.order.Remove(e)
			delete(v.keys, raw)
		}
		return nil, true
	case !ok:
		// evicted meanwhile: remember it again, expanded
		e = v.rememberLocked(raw)
	}
	vk := e.Value.(*verifierKey)
	if vk.expanded == nil {
		// another goroutine may have expanded it meanwhile: keep the first
		vk.expanded = expanded
	}
	return vk.expanded, true
}

// rememberLocked adds raw, unexpanded, as the key used most recently, and
// evicts beyond the capacity.
func (v *Verifier) rememberLocked(raw [voi.PublicKeySize]byte) *list.Element {
	e := v.order.PushFront(&verifierKey{raw: raw})
	v.keys[raw] = e
	for v.order.Len() > v.capacity {
		v.evictLocked()
	}
	return e
}

// evictLocked drops the key used least recently.
func (v *Verifier) evictLocked() {
	e := v.order.Back()
	if e == nil {
		return
	}
	v.order.Remove(e)
	delete(v.keys, e.Value.(*verifierKey).raw)
}
