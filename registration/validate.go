package registration

import (
	"fmt"
	"net/netip"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Annotation limits: every publisher and every reader holds an entry to
// them through Entry.Validate.
const (
	// MaxAnnotationKey bounds an annotation key, in bytes.
	MaxAnnotationKey = 64
	// MaxAnnotationValue bounds an annotation value, in bytes.
	MaxAnnotationValue = 1024
	// MaxHostName bounds an address that is a host name (RFC 1123).
	MaxHostName = 253
)

// ValidAddress checks an entry's address: an IP address (IPv4 in dotted
// decimal, or IPv6 without a zone) or an RFC 1123 host name (labels of 1
// to 63 letters, digits and '-', not starting or ending with '-', at most
// 253 bytes, the last label not all digits). Nothing else reaches a
// template: no ';', quotes, braces, '$', '#', '/', whitespace or control
// characters. The error says what is wrong without the "address" prefix.
func ValidAddress(a string) error {
	if a == "" {
		return fmt.Errorf("must not be empty")
	}
	if len(a) > MaxHostName {
		return fmt.Errorf("is %d bytes long, the limit is %d", len(a), MaxHostName)
	}
	if ip, err := netip.ParseAddr(a); err == nil {
		if ip.Zone() != "" {
			return fmt.Errorf("must be an IP address without a zone or a host name")
		}
		return nil
	}
	labels := strings.Split(a, ".")
	for i, l := range labels {
		if l == "" {
			return fmt.Errorf("must be an IP address or an RFC 1123 host name: empty label")
		}
		if len(l) > 63 {
			return fmt.Errorf("must be an IP address or an RFC 1123 host name: label %d is longer than 63 bytes", i+1)
		}
		for j := 0; j < len(l); j++ {
			c := l[j]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
				r, _ := utf8.DecodeRuneInString(l[j:])
				return fmt.Errorf("must be an IP address or an RFC 1123 host name: character %q is not allowed (letters, digits, '-' and '.' only)", r)
			}
		}
		if l[0] == '-' || l[len(l)-1] == '-' {
			return fmt.Errorf("must be an IP address or an RFC 1123 host name: a label starts or ends with '-'")
		}
	}
	if last := labels[len(labels)-1]; strings.Trim(last, "0123456789") == "" {
		return fmt.Errorf("must be an IP address or an RFC 1123 host name: not a valid IP address, and a host name's last label is not all digits")
	}
	return nil
}

// ValidAnnotation checks one annotation: a key of 1 to MaxAnnotationKey
// bytes of letters, digits and . _ - /, and a value of at most
// MaxAnnotationValue bytes of valid UTF-8 without control characters
// (no newline, tab, carriage return, escape, DEL, C1 controls) or line
// and paragraph separators. The error says what is wrong.
func ValidAnnotation(key, value string) error {
	if key == "" || len(key) > MaxAnnotationKey {
		return fmt.Errorf("annotation key %.60q: must be 1 to %d bytes", key, MaxAnnotationKey)
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-' || c == '/') {
			return fmt.Errorf("annotation key %.60q: character %q is not allowed (letters, digits and . _ - / only)", key, rune(c))
		}
	}
	if len(value) > MaxAnnotationValue {
		return fmt.Errorf("annotation %s: the value is %d bytes long, the limit is %d", key, len(value), MaxAnnotationValue)
	}
	if !utf8.ValidString(value) {
		return fmt.Errorf("annotation %s: the value is not valid UTF-8", key)
	}
	for i, r := range value {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			return fmt.Errorf("annotation %s: the value holds the control character %q at byte %d", key, r, i)
		}
	}
	return nil
}
