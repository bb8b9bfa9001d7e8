package archivetype

import (
	"net/url"
	"path/filepath"
	"strings"

	"github.com/ccm-fleet/ccm/resources"
)

// Ensure values of the archive type.
const (
	// EnsurePresent: the archive must be downloaded (and, with
	// extract_parent, extracted). It is the default.
	EnsurePresent = "present"
	// EnsureAbsent: the archive file must not exist.
	EnsureAbsent = "absent"
)

// Properties are the archive resource's properties. Name is the absolute
// path the archive is saved to.
type Properties struct {
	resources.CommonProperties

	// URL is the http or https URL the archive is downloaded from; its path
	// ends with the same archive extension as Name.
	URL string `json:"url"`
	// Checksum is the expected SHA-256 of the archive in hex, compared
	// case-insensitively; Validate lower-cases it.
	Checksum string `json:"checksum,omitempty"`
	// ExtractParent is the directory the archive is extracted into.
	ExtractParent string `json:"extract_parent,omitempty"`
	// Creates is a file whose existence means the archive was extracted.
	Creates string `json:"creates,omitempty"`
	// Cleanup removes the archive after extraction; it needs ExtractParent
	// and Creates.
	Cleanup bool `json:"cleanup,omitempty"`
	// Owner is the user (name or numeric id) owning the archive file.
	Owner string `json:"owner"`
	// Group is the group (name or numeric id) owning the archive file.
	Group string `json:"group"`
	// Username is the HTTP Basic Authentication user.
	Username string `json:"username,omitempty"`
	// Password is the HTTP Basic Authentication password. Secret.
	Password string `json:"password,omitempty"`
	// Headers are extra HTTP request headers. Their values are secret.
	Headers map[string]string `json:"headers,omitempty"`
}

var _ resources.Properties = (*Properties)(nil)

// maxAccount bounds owner, group and username.
const maxAccount = 256

// Validate sets the default ensure, lower-cases the checksum and checks
// every property. A failure wraps resources.ErrInvalid, names the property
// and never quotes a credential.
func (p *Properties) Validate() error {
	if p.Ensure == "" {
		p.Ensure = EnsurePresent
	}
	if err := p.ValidateCommon(); err != nil {
		return err
	}
	if p.Ensure != EnsurePresent && p.Ensure != EnsureAbsent {
		return resources.InvalidField("ensure", "%q is not one of %s, %s", p.Ensure, EnsurePresent, EnsureAbsent)
	}
	if err := checkPath("name", p.Name); err != nil {
		return err
	}
	nameFormat, ok := FormatOf(p.Name)
	if !ok {
		return resources.InvalidField("name", "%q does not end in a supported archive extension %v", p.Name, SupportedExtensions())
	}
	urlFormat, err := checkURL(p.URL)
	if err != nil {
		return err
	}
	if urlFormat != nameFormat {
		return resources.InvalidField("url", "archive type %s does not match the name's archive type %s", urlFormat, nameFormat)
	}
	if err := p.validateChecksum(); err != nil {
		return err
	}
	for _, opt := range []struct{ prop, value string }{{"extract_parent", p.ExtractParent}, {"creates", p.Creates}} {
		if opt.value == "" {
			continue
		}
		if err := checkPath(opt.prop, opt.value); err != nil {
			return err
		}
	}
	if p.Cleanup && (p.ExtractParent == "" || p.Creates == "") {
		return resources.InvalidField("cleanup", "requires extract_parent and creates")
	}
	if err := checkAccount("owner", p.Owner); err != nil {
		return err
	}
	if err := checkAccount("group", p.Group); err != nil {
		return err
	}
	if err := p.validateAuth(); err != nil {
		return err
	}
	return validateHeaders(p.Headers)
}

func (p *Properties) validateChecksum() error {
	if p.Checksum == "" {
		return nil
	}
	if len(p.Checksum) != 64 || strings.IndexFunc(p.Checksum, func(r rune) bool { return !isHex(r) }) >= 0 {
		return resources.InvalidField("checksum", "%q is not a SHA-256 hex digest (64 hex characters)", p.Checksum)
	}
	p.Checksum = strings.ToLower(p.Checksum)
	return nil
}

func (p *Properties) validateAuth() error {
	if p.Password != "" && p.Username == "" {
		return resources.InvalidField("password", "requires username")
	}
	if p.Username == "" {
		return nil
	}
	if strings.ContainsRune(p.Username, ':') || hasControl(p.Username) || len(p.Username) > maxAccount {
		return resources.InvalidField("username", "must be at most %d characters without ':' or control characters", maxAccount)
	}
	if hasControl(p.Password) {
		return resources.InvalidField("password", "contains control characters")
	}
	if u, err := url.Parse(p.URL); err == nil && u.User != nil {
		return resources.InvalidField("username", "the url already carries credentials; use one or the other")
	}
	return nil
}

// checkPath requires an absolute, clean path.
func checkPath(prop, path string) error {
	switch {
	case strings.ContainsRune(path, 0):
		return resources.InvalidField(prop, "contains a NUL byte")
	case !filepath.IsAbs(path):
		return resources.InvalidField(prop, "%q is not an absolute path", path)
	case filepath.Clean(path) != path:
		return resources.InvalidField(prop, "%q is not a clean path (expected %q)", path, filepath.Clean(path))
	}
	return nil
}

// checkURL requires an http or https URL with a host whose path ends in a
// supported archive extension. Messages never quote the URL, which may
// carry credentials.
func checkURL(raw string) (Format, error) {
	if raw == "" {
		return "", resources.InvalidFieldPredicate("url", "is required")
	}
	if hasControl(raw) {
		return "", resources.InvalidField("url", "contains control characters")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", resources.InvalidField("url", "%s is not a valid URL", RedactURL(raw))
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", resources.InvalidField("url", "scheme %q is not http or https", u.Scheme)
	}
	if u.Host == "" {
		return "", resources.InvalidField("url", "%s has no host", RedactURL(raw))
	}
	f, ok := FormatOf(u.Path)
	if !ok {
		return "", resources.InvalidField("url", "path %q does not end in a supported archive extension %v", u.Path, SupportedExtensions())
	}
	return f, nil
}

// checkAccount requires a user or group name or id.
func checkAccount(prop, v string) error {
	switch {
	case v == "":
		return resources.InvalidFieldPredicate(prop, "is required")
	case len(v) > maxAccount:
		return resources.InvalidField(prop, "longer than %d bytes", maxAccount)
	case hasControl(v) || strings.ContainsAny(v, ": /"):
		return resources.InvalidField(prop, "%q is not a valid name", v)
	case !portableAccount(v):
		return resources.InvalidField(prop, "%q is not a valid name (letters, digits, '.', '_' and '-', not starting with '-', optionally ending in '$')", v)
	}
	return nil
}

// validateHeaders requires RFC 9110 token header names and values free of
// control characters; values are never quoted.
func validateHeaders(h map[string]string) error {
	for name, value := range h {
		if name == "" || strings.IndexFunc(name, func(r rune) bool { return !isTokenChar(r) }) >= 0 {
			return resources.InvalidField("headers", "%q is not a valid header name", name)
		}
		if strings.IndexFunc(value, func(r rune) bool { return r != '\t' && (r < 0x20 || r == 0x7f) }) >= 0 {
			return resources.InvalidField("headers", "the value of %q contains control characters", name)
		}
	}
	return nil
}

func hasControl(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0
}

func isHex(r rune) bool {
	return (r >= '0' && r <= '9') || (r >= 'a' && r <= 'f') || (r >= 'A' && r <= 'F')
}

func isTokenChar(r rune) bool {
	if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
		return true
	}
	return strings.ContainsRune("!#$%&'*+-.^_`|~", r)
}

// portableAccount reports whether v is a portable user or group name (or
// a numeric id): ASCII letters, digits, '.', '_' and '-', not starting
// with '-', with an optional trailing '$'. Look-alike letters from other
// scripts and shell metacharacters are not.
func portableAccount(v string) bool {
	v = strings.TrimSuffix(v, "$")
	if v == "" || v[0] == '-' {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}
