package sources

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nkeys"

	"github.com/ccm-fleet/ccm/protocol"
)

// Signature metadata keys: in an object's metadata as written, and as HTTP
// response headers (canonical form) for a bundle served over http(s).
const (
	// MetaSigner holds the signer's nkeys user public key.
	MetaSigner = "Ccm-Signer"
	// MetaSignature holds the signature of the statement (see Statement).
	MetaSignature = "Ccm-Signature"
	// MetaSHA256 holds the archive's SHA-256 digest, hex.
	MetaSHA256 = "Ccm-Bundle-Sha256"
	// MetaCreated holds when the bundle was signed, RFC 3339 with
	// nanoseconds, UTC.
	MetaCreated = "Ccm-Bundle-Created"
	// MetaName holds the bundle's name (see Source.BundleName).
	MetaName = "Ccm-Bundle-Name"
)

// statementPrefix starts every signed bundle statement, so a bundle
// signature can never be taken for a signature of anything else.
const statementPrefix = "io.choria.ccm.v1.bundle"

// Signature is what a signed bundle carries besides its bytes.
type Signature struct {
	// Signer is the signer's nkeys user public key ("U...").
	Signer string
	// Signature is the signature of Statement(), base64 raw-URL.
	Signature string
	// SHA256 is the archive's digest, hex.
	SHA256 string
	// Created is when the bundle was signed; an agent never applies a
	// bundle older than one it applied from the same source.
	Created time.Time
	// Name is the bundle's name (the last element of its key or URL).
	Name string
}

// Digest is the hex SHA-256 digest of data.
func Digest(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// Statement is the exact bytes signed: the prefix, name, digest and
// creation time, one per line.
func (s *Signature) Statement() []byte {
	return []byte(strings.Join([]string{statementPrefix, s.Name, s.SHA256, s.Created.UTC().Format(time.RFC3339Nano)}, "\n"))
}

// SignBundle signs the archive data as the bundle name at time created
// with kp, a user key with its seed.
func SignBundle(data []byte, name string, created time.Time, kp nkeys.KeyPair) (*Signature, error) {
	s := &Signature{SHA256: Digest(data), Created: created.UTC(), Name: name}
	signer, sig, err := protocol.Sign(s.Statement(), kp)
	if err != nil {
		return nil, fmt.Errorf("sign bundle %s: %w", name, err)
	}
	s.Signer, s.Signature = signer, sig
	return s, nil
}

// Metadata is the signature as metadata key/value pairs.
func (s *Signature) Metadata() map[string]string {
	return map[string]string{
		MetaSigner:    s.Signer,
		MetaSignature: s.Signature,
		MetaSHA256:    s.SHA256,
		MetaCreated:   s.Created.UTC().Format(time.RFC3339Nano),
		MetaName:      s.Name,
	}
}

// SignatureFrom reads a signature from metadata, with get returning the
// value of a key ("" when absent). No signer and no signature wraps
// ErrUnsigned; a partial or malformed set wraps ErrBadSignature.
func SignatureFrom(get func(key string) string) (*Signature, error) {
	s := &Signature{Signer: get(MetaSigner), Signature: get(MetaSignature), SHA256: get(MetaSHA256), Name: get(MetaName)}
	if s.Signer == "" && s.Signature == "" {
		return nil, ErrUnsigned
	}
	created := get(MetaCreated)
	t, err := time.Parse(time.RFC3339Nano, created)
	if err != nil {
		return nil, fmt.Errorf("%w: %s %.40q is not an RFC 3339 time", ErrBadSignature, MetaCreated, created)
	}
	s.Created = t.UTC()
	return s, nil
}

// Verify checks that s is a valid signature of data as the bundle name:
// the digest matches the bytes, the name matches, and the signature of
// the statement verifies with the signer's key. It says nothing of whether
// the signer is trusted: the agent's policy decides that. Errors wrap
// ErrBadSignature.
func (s *Signature) Verify(data []byte, name string) error {
	if got := Digest(data); got != s.SHA256 {
		return fmt.Errorf("%w: the archive's digest is %s, the signed one %.64s", ErrBadSignature, got, s.SHA256)
	}
	if s.Name != name {
		return fmt.Errorf("%w: signed as bundle %.80q, fetched as %q", ErrBadSignature, s.Name, name)
	}
	if err := protocol.Verify(s.Statement(), s.Signer, s.Signature); err != nil {
		return fmt.Errorf("%w: %w", ErrBadSignature, err)
	}
	return nil
}
