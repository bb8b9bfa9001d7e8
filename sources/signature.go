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
	// MetaLocation holds where the bundle is kept, as signed (see
	// Source.Location).
	MetaLocation = "Ccm-Bundle-Location"
	// metaName held the bundle's base name alone, in signatures made
	// before they named the location: such a signature is refused, with
	// a message saying to sign the bundle again.
	metaName = "Ccm-Bundle-Name"
)

// statementPrefix starts every signed bundle statement, so a bundle
// signature can never be taken for a signature of anything else (nor for
// one of the earlier statements, which named the base name alone).
const statementPrefix = "io.choria.ccm.v1.bundle.location"

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
	// Location is where the bundle is kept (see Source.Location):
	// obj://bucket/key or its URL.
	Location string
	// legacyName is the base name a signature made before signatures
	// named the location carries ("" otherwise).
	legacyName string
}

// Digest is the hex SHA-256 digest of data.
func Digest(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// Statement is the exact bytes signed: the prefix, the location, the
// digest and the creation time (the bundle's version: an agent never
// applies a bundle signed before one it applied from the same source),
// one per line.
func (s *Signature) Statement() []byte {
	return []byte(strings.Join([]string{statementPrefix, s.Location, s.SHA256, s.Created.UTC().Format(time.RFC3339Nano)}, "\n"))
}

// SignBundle signs the archive data as the bundle kept at location
// (Source.Location: obj://bucket/key or its URL) at time created with
// kp, a user key with its seed.
func SignBundle(data []byte, location string, created time.Time, kp nkeys.KeyPair) (*Signature, error) {
	if strings.ContainsAny(location, "\n\r") || !strings.Contains(location, "://") {
		return nil, fmt.Errorf("sign bundle %.100q: the location must be obj://bucket/key or a URL", location)
	}
	s := &Signature{SHA256: Digest(data), Created: created.UTC(), Location: location}
	signer, sig, err := protocol.Sign(s.Statement(), kp)
	if err != nil {
		return nil, fmt.Errorf("sign bundle %s: %w", location, err)
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
		MetaLocation:  s.Location,
	}
}

// SignatureFrom reads a signature from metadata, with get returning the
// value of a key ("" when absent). No signer and no signature wraps
// ErrUnsigned; a partial or malformed set wraps ErrBadSignature.
func SignatureFrom(get func(key string) string) (*Signature, error) {
	s := &Signature{Signer: get(MetaSigner), Signature: get(MetaSignature), SHA256: get(MetaSHA256), Location: get(MetaLocation)}
	if s.Location == "" {
		s.legacyName = get(metaName)
	}
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

// Verify checks that s is a valid signature of data as the bundle kept at
// location (Source.Location): the digest matches the bytes, the signed
// location is location, and the signature of the statement verifies with
// the signer's key. It says nothing of whether the signer is trusted: the
// agent's policy decides that. Errors wrap ErrBadSignature.
func (s *Signature) Verify(data []byte, location string) error {
	if got := Digest(data); got != s.SHA256 {
		return fmt.Errorf("%w: the archive's digest is %s, the signed one %.64s", ErrBadSignature, got, s.SHA256)
	}
	if s.Location == "" && s.legacyName != "" {
		return fmt.Errorf("%w: signed for the name %.80q only, not for a location (an older ccm-orch signed it): sign it again for %s (ccm-orch manifest put)", ErrBadSignature, s.legacyName, location)
	}
	if s.Location != location {
		return fmt.Errorf("%w: signed for %.300q, fetched from %q: a bundle runs only from the location it was signed for", ErrBadSignature, s.Location, location)
	}
	if err := protocol.Verify(s.Statement(), s.Signer, s.Signature); err != nil {
		return fmt.Errorf("%w: %w", ErrBadSignature, err)
	}
	return nil
}
