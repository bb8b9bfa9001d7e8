package protocol

import (
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/nats-io/nkeys"
	voi "github.com/oasisprotocol/curve25519-voi/primitives/ed25519"
)

// Signature headers: a signed message carries the signer's public key and
// the signature of its exact body bytes.
const (
	// HeaderSigner is the header holding the signer's nkeys user public key
	// ("U...").
	HeaderSigner = "Ccm-Signer"
	// HeaderSignature is the header holding the ed25519 signature of the
	// message body made with the signer's key, base64 raw-URL encoded.
	HeaderSignature = "Ccm-Signature"
)

// MaxSignatureLength bounds the encoded signature header (an ed25519
// signature is 86 characters).
const MaxSignatureLength = 128

// ErrSignature is returned by Verify when a signature is missing, malformed
// or does not match the body and the signer.
var ErrSignature = errors.New("invalid signature")

// ErrSigner is returned by Verify and ParseUserKey when a public key is
// missing or is not an nkeys user public key.
var ErrSigner = errors.New("invalid signer")

// SignerError is the error of a key that cannot sign or verify: it matches
// ErrSigner with errors.Is, and Detail says what is wrong with the key
// without the sentinel's words, for a caller that names the key itself.
type SignerError struct {
	// Detail is the problem with the key: `no public key`, `"x" is not an
	// nkeys user public key`.
	Detail string
	// Err is the cause reported by nkeys, or nil.
	Err error
}

func (e *SignerError) Error() string { return ErrSigner.Error() + ": " + e.Detail }

// Is reports whether target is ErrSigner.
func (e *SignerError) Is(target error) bool { return target == ErrSigner }

// Unwrap returns the cause, or nil.
func (e *SignerError) Unwrap() error { return e.Err }

// signerError builds a SignerError whose Detail is the formatted text.
func signerError(format string, args ...any) *SignerError {
	return &SignerError{Detail: fmt.Sprintf(format, args...)}
}

// signerCause builds a SignerError from an nkeys error.
func signerCause(err error) *SignerError { return &SignerError{Detail: err.Error(), Err: err} }

// Sign signs body with kp and returns the signer's public key and the
// signature as base64 raw-URL, the values of HeaderSigner and
// HeaderSignature. kp must be a user key pair.
func Sign(body []byte, kp nkeys.KeyPair) (signer, signature string, err error) {
	if kp == nil {
		return "", "", signerError("no key")
	}
	pub, err := kp.PublicKey()
	if err != nil {
		return "", "", signerCause(err)
	}
	if !nkeys.IsValidPublicUserKey(pub) {
		return "", "", signerError("%.12s... is not a user key", pub)
	}
	sig, err := kp.Sign(body)
	if err != nil {
		return "", "", fmt.Errorf("sign: %w", err)
	}
	return pub, base64.RawURLEncoding.EncodeToString(sig), nil
}

// Verify checks that signature (base64 raw-URL) is signer's signature of
// the exact bytes of body. A signer that is not a user public key wraps
// ErrSigner; a missing, malformed or wrong signature wraps ErrSignature.
func Verify(body []byte, signer, signature string) error {
	raw, err := userKeyBytes(signer)
	if err != nil {
		return err
	}
	sig, err := decodeSignature(signature)
	if err != nil {
		return err
	}
	if !verifyKey(raw[:], body, sig) {
		return errMismatch()
	}
	return nil
}

// ParseUserKey parses an nkeys user public key ("U...") into a key pair
// that can verify; anything else wraps ErrSigner.
func ParseUserKey(pub string) (nkeys.KeyPair, error) {
	if pub == "" {
		return nil, signerError("no public key")
	}
	if len(pub) > 64 || !nkeys.IsValidPublicUserKey(pub) {
		return nil, signerError("%.60q is not an nkeys user public key", pub)
	}
	kp, err := nkeys.FromPublicKey(pub)
	if err != nil {
		return nil, signerCause(err)
	}
	return kp, nil
}

// SignatureHeaders signs body with kp and returns the two headers as a map
// suitable for nats.Header (which is a map[string][]string).
func SignatureHeaders(body []byte, kp nkeys.KeyPair) (map[string][]string, error) {
	signer, sig, err := Sign(body, kp)
	if err != nil {
		return nil, err
	}
	return map[string][]string{HeaderSigner: {signer}, HeaderSignature: {sig}}, nil
}

// KeySigner signs with a user key whose ed25519 private key is derived
// once: nkeys derives it again on every Sign, which costs as much as the
// signature itself. Its signatures are those of Sign. It is safe for
// concurrent use.
type KeySigner struct {
	pub  string
	priv voi.PrivateKey
}

// NewKeySigner prepares kp, a user key pair with its seed, for signing.
func NewKeySigner(kp nkeys.KeyPair) (*KeySigner, error) {
	if kp == nil {
		return nil, signerError("no key")
	}
	pub, err := kp.PublicKey()
	if err != nil || !nkeys.IsValidPublicUserKey(pub) {
		return nil, signerError("not a user key")
	}
	seed, err := kp.Seed()
	if err != nil {
		return nil, signerCause(err)
	}
	_, raw, err := nkeys.DecodeSeed(seed)
	if err != nil {
		return nil, signerCause(err)
	}
	return &KeySigner{pub: pub, priv: voi.NewKeyFromSeed(raw)}, nil
}

// PublicKey is the signer's nkeys user public key.
func (s *KeySigner) PublicKey() string { return s.pub }

// Sign returns the signature of body, base64 raw-URL encoded, the value of
// HeaderSignature.
func (s *KeySigner) Sign(body []byte) string {
	return base64.RawURLEncoding.EncodeToString(voi.Sign(s.priv, body))
}

// Header returns the two signature headers of body.
func (s *KeySigner) Header(body []byte) map[string][]string {
	return map[string][]string{HeaderSigner: {s.pub}, HeaderSignature: {s.Sign(body)}}
}
