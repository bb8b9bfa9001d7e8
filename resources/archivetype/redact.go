package archivetype

import (
	"fmt"
	"log/slog"
	"net/url"
	"sort"
	"strings"
)

// Redaction replaces secrets in redacted copies of properties and URLs.
const Redaction = "[redacted]"

// Redacted returns a copy of the properties safe to record in events: the
// password and every header value are replaced by Redaction, and so is the
// userinfo of the URL. The receiver is not modified.
func (p *Properties) Redacted() any {
	c := *p
	if c.Password != "" {
		c.Password = Redaction
	}
	if p.Headers != nil {
		c.Headers = make(map[string]string, len(p.Headers))
		for k := range p.Headers {
			c.Headers[k] = Redaction
		}
	}
	c.URL = RedactURL(p.URL)
	return &c
}

// LogValue makes slog print a credential-free summary of the properties.
func (p Properties) LogValue() slog.Value {
	headers := make([]string, 0, len(p.Headers))
	for k := range p.Headers {
		headers = append(headers, k)
	}
	sort.Strings(headers)
	return slog.GroupValue(
		slog.String("name", p.Name),
		slog.String("ensure", p.Ensure),
		slog.String("url", RedactURL(p.URL)),
		slog.String("extract_parent", p.ExtractParent),
		slog.String("creates", p.Creates),
		slog.Bool("cleanup", p.Cleanup),
		slog.String("owner", p.Owner),
		slog.String("group", p.Group),
		slog.Bool("basic_auth", p.Username != ""),
		slog.Any("header_names", headers),
	)
}

// String describes the resource without credentials, so that printing
// properties with %v or %s cannot leak them.
func (p Properties) String() string {
	return fmt.Sprintf("archive %s from %s", p.Name, RedactURL(p.URL))
}

// RedactURL returns raw with the userinfo (user and password) replaced by
// Redaction. A string that does not parse as a URL but contains '@' is
// replaced entirely, since it may hold credentials.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		if strings.ContainsRune(raw, '@') {
			return Redaction
		}
		return raw
	}
	if u.User == nil {
		return raw
	}
	u.User = nil
	s := u.String()
	if scheme := u.Scheme + "://"; strings.HasPrefix(s, scheme) {
		return scheme + Redaction + "@" + strings.TrimPrefix(s, scheme)
	}
	return s
}
