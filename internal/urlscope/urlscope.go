// Package urlscope judges the URLs a resource fetches on behalf of a
// signer: the prefixes of its net.urls and deny.net.urls scopes (scheme,
// host, port, then the path component by component), the addresses
// refused without an explicit allow (loopback, link-local, unspecified and
// cloud metadata), and the same judgement again at every redirect hop and
// on every address a download dials, so neither a redirect nor a name that
// resolves to a loopback address (DNS rebinding) gets around it.
//
// The scope package compiles the prefixes and judges the URLs a resource
// declares (the agent and ccm-orch policy check alike); providers and
// fetchers that download take the Guards a run put in their context and
// fetch through Client.
package urlscope

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// ErrRefused is wrapped by every refusal of a URL or of an address
// dialled for one.
var ErrRefused = errors.New("url refused")

// Rule names used in decisions.
const (
	// RuleAllow is the rule of allowed prefixes.
	RuleAllow = "net.urls"
	// ruleUnset names the default refusals of a signer without net.urls.
	ruleUnset = "net.urls (not set)"
)

// Prefix is one compiled URL prefix of net.urls or deny.net.urls.
type Prefix struct {
	// Rule is where it is written: net.urls[0].
	Rule string
	// Raw is the prefix as written.
	Raw string
	t   target
}

// String names the prefix as a rule: `net.urls[0] "https://repo/x/"`.
func (p Prefix) String() string { return fmt.Sprintf("%s %q", p.Rule, p.Raw) }

// target is a URL as judged: scheme, host (lower case, no trailing dot, an
// IP address in its canonical form), port (the scheme's default filled
// in) and path components.
type target struct {
	scheme, host, port string
	ip                 netip.Addr // valid when host is an IP address
	path               []string
}

func (t target) origin() string {
	h := t.host
	if t.ip.Is6() {
		h = "[" + h + "]"
	}
	return t.scheme + "://" + h + ":" + t.port
}

// ParsePrefix checks and compiles a prefix: an http or https URL with a
// host, no user information, query or fragment, and no "." or ".." path
// components. rule names it in decisions.
func ParsePrefix(rule, raw string) (Prefix, error) {
	if strings.Contains(authority(raw), "@") {
		return Prefix{}, errors.New("user information (user@ or user:password@) is not allowed in a prefix")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return Prefix{}, errors.New("not a URL")
	}
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return Prefix{}, errors.New("a prefix has no query or fragment")
	}
	t, err := parseURL(u)
	if err != nil {
		return Prefix{}, err
	}
	return Prefix{Rule: rule, Raw: raw, t: t}, nil
}

// authority is the part of raw between "://" and the path, query or
// fragment.
func authority(raw string) string {
	_, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return ""
	}
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

// parseTarget parses a URL to judge; user information (a redacted
// password included) is left out, as it does not change where the URL
// leads.
func parseTarget(raw string) (target, error) {
	if a := authority(raw); strings.Contains(a, "@") {
		raw = strings.Replace(raw, a, a[strings.LastIndexByte(a, '@')+1:], 1)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return target{}, errors.New("not a URL")
	}
	return parseURL(u)
}

func parseURL(u *url.URL) (target, error) {
	var t target
	switch t.scheme = strings.ToLower(u.Scheme); t.scheme {
	case "http", "https":
	case "":
		return t, errors.New("not an absolute URL")
	default:
		return t, fmt.Errorf("scheme %s: only http and https URLs are fetched", t.scheme)
	}
	if u.Opaque != "" {
		return t, errors.New("not a hierarchical URL")
	}
	var err error
	if t.host, t.ip, err = normHost(u.Hostname()); err != nil {
		return t, err
	}
	if t.port, err = normPort(u.Port(), t.scheme); err != nil {
		return t, err
	}
	if t.path, err = components(u.EscapedPath()); err != nil {
		return t, err
	}
	return t, nil
}

// normHost checks a host name or IP address and returns its canonical
// form: lower case, no trailing dot, an IPv4-mapped IPv6 address as IPv4.
// A name whose last label starts with a digit (127.1, 0x7f000001,
// 2130706433) is an address in a form resolvers read differently: refused.
func normHost(h string) (string, netip.Addr, error) {
	if h == "" {
		return "", netip.Addr{}, errors.New("no host")
	}
	if ip, err := netip.ParseAddr(h); err == nil {
		if ip.Zone() != "" {
			return "", netip.Addr{}, errors.New("an IPv6 zone is not allowed in a host")
		}
		ip = ip.Unmap()
		return ip.String(), ip, nil
	}
	h = strings.TrimSuffix(strings.ToLower(h), ".")
	if len(h) == 0 || len(h) > 253 {
		return "", netip.Addr{}, fmt.Errorf("host %.80q is not a valid name", h)
	}
	labels := strings.Split(h, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 || strings.IndexFunc(l, func(r rune) bool {
			return (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '-' && r != '_'
		}) >= 0 {
			return "", netip.Addr{}, fmt.Errorf("host %.80q is not a valid name (letters, digits, '-' and '_' in dotted labels; write other names in punycode)", h)
		}
	}
	if last := labels[len(labels)-1]; last[0] >= '0' && last[0] <= '9' {
		return "", netip.Addr{}, fmt.Errorf("host %.80q is neither a name nor an IP address in its usual form", h)
	}
	return h, netip.Addr{}, nil
}

// normPort is the port, the scheme's default when p is empty, without
// leading zeros.
func normPort(p, scheme string) (string, error) {
	if p == "" {
		if scheme == "https" {
			return "443", nil
		}
		return "80", nil
	}
	n, err := strconv.Atoi(p)
	if err != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf("port %.20q is not a port number", p)
	}
	return strconv.Itoa(n), nil
}

// components splits an escaped path into its decoded components, a
// trailing slash left out. A component that decodes to "." or "..", or
// that holds a slash or a backslash once decoded, is refused: servers
// read them differently.
func components(escaped string) ([]string, error) {
	escaped = strings.TrimPrefix(escaped, "/")
	if escaped == "" {
		return nil, nil
	}
	parts := strings.Split(escaped, "/")
	if parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	out := make([]string, len(parts))
	for i, p := range parts {
		d, err := url.PathUnescape(p)
		if err != nil {
			return nil, fmt.Errorf("path component %.40q is not validly escaped", p)
		}
		switch {
		case d == "." || d == "..":
			return nil, fmt.Errorf("path component %q: write the path without . and .. components", d)
		case strings.ContainsAny(d, `/\`):
			return nil, fmt.Errorf("path component %.40q holds an escaped slash or a backslash", p)
		}
		out[i] = d
	}
	return out, nil
}

// holds reports whether t is at prefix p or below it.
func (p Prefix) holds(t target) bool {
	pt := p.t
	if pt.scheme != t.scheme || pt.host != t.host || pt.port != t.port || len(pt.path) > len(t.path) {
		return false
	}
	for i, c := range pt.path {
		if t.path[i] != c {
			return false
		}
	}
	return true
}

// Matches reports whether the URL raw is at prefix p or below it.
func (p Prefix) Matches(raw string) bool {
	t, err := parseTarget(raw)
	return err == nil && p.holds(t)
}

// Covers reports whether every URL allow holds, deny (p) holds too.
func (p Prefix) Covers(allow Prefix) bool { return p.holds(allow.t) }

// Same reports whether p and q hold exactly the same URLs.
func (p Prefix) Same(q Prefix) bool { return p.Covers(q) && q.Covers(p) }

// Special says why an address is refused without an explicit allow:
// "loopback", "link-local", "cloud metadata" or "unspecified"; "" when it
// is not.
func Special(ip netip.Addr) string {
	ip = ip.Unmap()
	switch {
	case ip == metadataV4 || ip == metadataV6:
		return "cloud metadata"
	case ip.IsLoopback():
		return "loopback"
	case ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast():
		return "link-local"
	case ip.IsUnspecified():
		return "unspecified (it reaches this host)"
	}
	return ""
}

var (
	metadataV4 = netip.MustParseAddr("169.254.169.254")
	metadataV6 = netip.MustParseAddr("fd00:ec2::254")
)

// special says why a target's host is refused without an explicit allow:
// its address, or a name that always means one (localhost, the cloud
// metadata service's name).
func (t target) special() string {
	switch {
	case t.ip.IsValid():
		return Special(t.ip)
	case t.host == "localhost" || strings.HasSuffix(t.host, ".localhost"):
		return "loopback"
	case t.host == "metadata.google.internal" || t.host == "metadata":
		return "cloud metadata"
	}
	return ""
}

// names reports whether the prefix names the address ip explicitly: its
// host is that address, or a name that always means such an address
// (localhost for a loopback address).
func (p Prefix) names(ip netip.Addr) bool {
	ip = ip.Unmap()
	if p.t.ip.IsValid() {
		return p.t.ip == ip
	}
	kind := p.t.special()
	return kind != "" && kind == Special(ip)
}
