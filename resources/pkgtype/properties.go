package pkgtype

import (
	"fmt"
	"strconv"

	"github.com/ccm-fleet/ccm/resources"
)

// Ensure values with a meaning of their own; any other ensure value is a
// version the package must be at.
const (
	// EnsurePresent means the package is installed, at any version.
	EnsurePresent = "present"
	// EnsureAbsent means the package is not installed.
	EnsureAbsent = "absent"
	// EnsureLatest means the package is installed and upgraded to the newest
	// version the package manager offers, on every apply.
	EnsureLatest = "latest"
)

// MaxNameLength is the longest package name, and the longest version, the
// type accepts.
const MaxNameLength = 256

// Properties are the package resource's properties: only the common ones.
// Name is the package name; Ensure is present (the default), absent, latest
// or a version.
type Properties struct {
	resources.CommonProperties
}

var _ resources.Properties = (*Properties)(nil)

// Validate defaults Ensure to present and checks the properties: the common
// ones, the package name (ValidateName) and, when ensure is a version, the
// version (ValidateVersion). Errors wrap resources.ErrInvalid.
func (p *Properties) Validate() error {
	if p.Ensure == "" {
		p.Ensure = EnsurePresent
	}
	if err := p.ValidateCommon(); err != nil {
		return err
	}
	if err := ValidateName(p.Name); err != nil {
		return err
	}
	if IsVersion(p.Ensure) {
		if err := ValidateVersion(p.Ensure); err != nil {
			return err
		}
	}
	return nil
}

// IsVersion reports whether an ensure value names a specific version rather
// than present, absent or latest.
func IsVersion(ensure string) bool {
	switch ensure {
	case EnsurePresent, EnsureAbsent, EnsureLatest:
		return false
	}
	return true
}

// ValidateName checks a package name before it is given to any command: 1
// to MaxNameLength bytes of a-z A-Z 0-9 . _ + : ~ -, starting with a
// letter or digit (so no name can be read as an option, nor as an apt
// pattern, which starts with ~ or ?). Anything else, including whitespace,
// NUL, quotes, shell metacharacters, glob characters, path separators and
// every non-ASCII character, is rejected with an error wrapping
// resources.ErrInvalid. Providers also resolve the name to a package of
// exactly that name before installing it.
func ValidateName(name string) error {
	if why := checkToken(name); why != "" {
		return resources.InvalidField("name", "package name %s", why)
	}
	if c := name[0]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
		return resources.InvalidField("name", "package name %s does not start with a letter or digit", quote(name))
	}
	return nil
}

// ValidateVersion checks a version string the same way as ValidateName.
func ValidateVersion(version string) error {
	if why := checkToken(version); why != "" {
		return resources.InvalidField("ensure", "version %s", why)
	}
	return nil
}

// checkToken returns why s is not an acceptable name or version, or "".
func checkToken(s string) string {
	switch {
	case s == "":
		return "is empty"
	case len(s) > MaxNameLength:
		return fmt.Sprintf("%s is longer than %d bytes", quote(s), MaxNameLength)
	case s[0] == '-':
		return quote(s) + " starts with a hyphen"
	}
	for i := 0; i < len(s); i++ {
		if !allowedByte(s[i]) {
			return quote(s) + " contains a character that is not allowed (allowed: a-z A-Z 0-9 . _ + : ~ -)"
		}
	}
	return ""
}

func allowedByte(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	case c == '.', c == '_', c == '+', c == ':', c == '~', c == '-':
		return true
	}
	return false
}

// quote renders s for an error message with every non-printable or
// non-ASCII byte escaped, so look-alikes are visible, and bounded in length.
func quote(s string) string {
	const max = 64
	if len(s) > max {
		return strconv.QuoteToASCII(s[:max]) + "..."
	}
	return strconv.QuoteToASCII(s)
}
