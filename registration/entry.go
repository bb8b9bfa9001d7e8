package registration

import (
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/choria-io/fisk"

	"github.com/ccm-fleet/ccm/protocol"
)

// Entry limits.
const (
	// MaxAnnotations bounds an entry's annotations.
	MaxAnnotations = 64
	// MaxFieldLength bounds every string of an entry.
	MaxFieldLength = 256
	// MaxEntryBytes bounds an encoded entry.
	MaxEntryBytes = 64 << 10
)

// TTLNever is the TTL of an entry that never expires.
const TTLNever = "never"

var validName = regexp.MustCompile(`^[a-zA-Z][a-zA-Z\d_-]*$`)

// Entry is one registered endpoint of a service.
type Entry struct {
	// Cluster, Service and Protocol name the service; each matches
	// [a-zA-Z][a-zA-Z\d_-]*.
	Cluster  string `json:"cluster" yaml:"cluster"`
	Service  string `json:"service" yaml:"service"`
	Protocol string `json:"protocol" yaml:"protocol"`
	// Address is the endpoint's IP address or RFC 1123 host name (see
	// ValidAddress).
	Address string `json:"address" yaml:"address"`
	// Port is between 1 and 65535; 0 when the entry has none.
	Port int `json:"port,omitempty" yaml:"port,omitempty"`
	// Priority is between 1 and 255, lower preferred.
	Priority int `json:"priority" yaml:"priority"`
	// TTL is how long the entry lives after its last publication: a
	// duration ("10m", "1h") or "never"; empty publishes without one.
	TTL string `json:"ttl,omitempty" yaml:"ttl,omitempty"`
	// Annotations are key/value metadata (see ValidAnnotation).
	Annotations map[string]string `json:"annotations,omitempty" yaml:"annotations,omitempty"`
	// Host is the identity of the host that published the entry, set by
	// the publishing agent. Readers accept the entry only when its signer
	// is the key they trust for this host (see Trust): in a Record it is
	// the verified host.
	Host string `json:"host,omitempty" yaml:"host,omitempty"`
}

// Validate checks every field against CCM's rules and this package's
// bounds. Errors wrap ErrInvalid and name the field.
func (e *Entry) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
	}
	for _, f := range []struct{ name, value string }{{"cluster", e.Cluster}, {"service", e.Service}, {"protocol", e.Protocol}} {
		if len(f.value) > MaxFieldLength || !validName.MatchString(f.value) {
			return bad("%s %.60q must match [a-zA-Z][a-zA-Z0-9_-]*", f.name, f.value)
		}
	}
	if err := ValidAddress(e.Address); err != nil {
		return bad("address %.60q %v", e.Address, err)
	}
	if e.Port < 0 || e.Port > 65535 {
		return bad("port %d must be between 1 and 65535", e.Port)
	}
	if e.Priority < 1 || e.Priority > 255 {
		return bad("priority %d must be between 1 and 255", e.Priority)
	}
	if e.Host != "" {
		if err := protocol.ValidateIdentity(e.Host); err != nil {
			return bad("host: %v", err)
		}
	}
	if _, err := e.TTLDuration(); err != nil {
		return bad("ttl %.40q: %v", e.TTL, err)
	}
	if len(e.Annotations) > MaxAnnotations {
		return bad("%d annotations, the limit is %d", len(e.Annotations), MaxAnnotations)
	}
	for _, k := range slices.Sorted(maps.Keys(e.Annotations)) {
		if err := ValidAnnotation(k, e.Annotations[k]); err != nil {
			return bad("annotations: %v", err)
		}
	}
	return nil
}

// TTLDuration is the entry's TTL; 0 for none or never.
func (e *Entry) TTLDuration() (time.Duration, error) {
	if e.TTL == "" || e.TTL == TTLNever {
		return 0, nil
	}
	d, err := fisk.ParseDuration(e.TTL)
	if err != nil {
		return 0, err
	}
	if d < time.Second {
		return 0, fmt.Errorf("must be at least 1s")
	}
	return d, nil
}

// natsTTL is the Nats-TTL header value, "" for none.
func (e *Entry) natsTTL() string {
	if e.TTL == TTLNever {
		return TTLNever
	}
	d, _ := e.TTLDuration()
	if d == 0 {
		return ""
	}
	return strconv.FormatInt(int64(d/time.Second), 10) + "s"
}

// SubjectAddress is the address as one subject token: dots become
// underscores.
func (e *Entry) SubjectAddress() string { return strings.ReplaceAll(e.Address, ".", "_") }

// InstanceID identifies the endpoint: a hash of its cluster, service,
// protocol, address and port.
func (e *Entry) InstanceID() string {
	h := fnv.New64a()
	for _, s := range []string{e.Cluster, e.Service, e.Protocol, e.Address, strconv.Itoa(e.Port)} {
		h.Write([]byte(s))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Subject selects the endpoint's entries whoever published them (its
// last token, the publisher's key, is a wildcard).
func (e *Entry) Subject() string { return e.PublisherSubject("*") }

// PublisherSubject is where the holder of the public key publisherKey
// keeps the entry: the endpoint's subject ending in that key, so that a
// broker can allow each host to publish only on its own key's subjects
// (choria.ccm.registration.v1.*.*.*.*.*.<key>) and readers can check that
// the entry was signed by the key its subject names.
func (e *Entry) PublisherSubject(publisherKey string) string {
	return strings.Join([]string{SubjectPrefix, e.Cluster, e.Protocol, e.Service, e.SubjectAddress(), e.InstanceID(), publisherKey}, ".")
}

// publisherOf is the last token of an entry subject: the key of whoever
// may publish there.
func publisherOf(subject string) string {
	toks := strings.Split(subject, ".")
	if len(toks) != subjectTokens {
		return ""
	}
	return toks[len(toks)-1]
}

// subjectTokens is the number of tokens of an entry subject.
const subjectTokens = 10

// FilterSubject selects entries by cluster, protocol, service and address;
// "" or "*" matches any.
func FilterSubject(cluster, protocol, service, address string) string {
	wild := func(s string) string {
		if s == "" || s == "*" {
			return "*"
		}
		return s
	}
	addr := wild(address)
	if addr != "*" {
		addr = strings.ReplaceAll(addr, ".", "_")
	}
	return strings.Join([]string{SubjectPrefix, wild(cluster), wild(protocol), wild(service), addr, "*", "*"}, ".")
}

// ValidFilter checks query positions: "", "*" or a valid name (cluster,
// protocol, service), and an address without wildcards or whitespace, so
// a filter can never reach past its own subject token. A refusal is a
// *FilterError, which wraps ErrInvalid.
func ValidFilter(cluster, protocol, service, address string) error {
	for _, f := range []struct{ name, value string }{{"cluster", cluster}, {"protocol", protocol}, {"service", service}} {
		if f.value != "" && f.value != "*" && (len(f.value) > MaxFieldLength || !validName.MatchString(f.value)) {
			return &FilterError{Field: f.name, Value: f.value, Rule: "must be * or match [a-zA-Z][a-zA-Z0-9_-]*"}
		}
	}
	if address != "" && address != "*" && (len(address) > MaxFieldLength || strings.ContainsAny(address, "*>_ \t\r\n") || strings.ContainsFunc(address, func(r rune) bool { return r < 0x21 || r > 0x7e })) {
		return &FilterError{Field: "address", Value: address, Rule: "must be * or an address without wildcards, underscores, whitespace or control characters"}
	}
	return nil
}
