package sources

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"path"
	"path/filepath"
	"strings"
)

// Kind is where a source's manifest lives.
type Kind string

// Source kinds.
const (
	// KindFile is a manifest file on this host, used in place (relative
	// sources resolve against its directory).
	KindFile Kind = "file"
	// KindObject is a bundle in a JetStream object store: obj://bucket/key.
	KindObject Kind = "obj"
	// KindHTTP is a bundle served over http or https.
	KindHTTP Kind = "http"
)

// MaxSourceLength bounds a source reference as written.
const MaxSourceLength = 2048

// validBucket reports whether name is a JetStream object store name: 1 to
// 64 ASCII letters, digits, '-' and '_'.
func validBucket(name string) bool {
	if len(name) == 0 || len(name) > 64 {
		return false
	}
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '_':
		default:
			return false
		}
	}
	return true
}

// Source is one parsed manifest source of the agent's configuration.
type Source struct {
	// Kind says where the manifest lives.
	Kind Kind
	// Path is a KindFile manifest's absolute path.
	Path string
	// Bucket and Key locate a KindObject bundle.
	Bucket, Key string
	// URL is a KindHTTP bundle's address as fetched (credentials kept,
	// fragment removed).
	URL *url.URL
	// SHA256 is the hex digest a KindHTTP bundle is pinned to
	// ("#sha256=..." on the URL); "" when not pinned.
	SHA256 string

	raw string
}

// Parse parses a source reference as CCM writes it: an absolute path to a
// manifest file, obj://bucket/key, or an http(s) URL (user:password@ for
// basic auth, and optionally #sha256=HEX to pin the bundle's digest).
// Errors wrap ErrSource.
func Parse(s string) (*Source, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %.80q: %s", ErrSource, s, fmt.Sprintf(format, args...))
	}
	switch {
	case s == "":
		return nil, bad("empty")
	case len(s) > MaxSourceLength:
		return nil, bad("%d characters, the limit is %d", len(s), MaxSourceLength)
	case strings.ContainsAny(s, "\x00\n\r"):
		return nil, bad("control characters")
	}
	if !strings.Contains(s, "://") {
		if !filepath.IsAbs(s) {
			return nil, bad("a local manifest must be an absolute path")
		}
		return &Source{Kind: KindFile, Path: filepath.Clean(s), raw: s}, nil
	}
	u, err := url.Parse(s)
	if err != nil {
		return nil, bad("%v", err)
	}
	switch u.Scheme {
	case "file":
		if u.Host != "" || !filepath.IsAbs(u.Path) {
			return nil, bad("a file:// source needs an absolute path")
		}
		return &Source{Kind: KindFile, Path: filepath.Clean(u.Path), raw: s}, nil
	case "obj":
		key := strings.TrimPrefix(u.Path, "/")
		switch {
		case !validBucket(u.Host):
			return nil, bad("bucket %q: use letters, digits, '-' and '_'", u.Host)
		case key == "" || path.Clean(key) != key || strings.HasPrefix(key, "../") || key == "..":
			return nil, bad("obj://bucket/key needs a clean key")
		case u.RawQuery != "" || u.Fragment != "" || u.User != nil:
			return nil, bad("obj:// takes no query, fragment or credentials")
		}
		return &Source{Kind: KindObject, Bucket: u.Host, Key: key, raw: s}, nil
	case "http", "https":
		if u.Host == "" {
			return nil, bad("no host")
		}
		src := &Source{Kind: KindHTTP, raw: s}
		if u.Fragment != "" {
			pin, ok := strings.CutPrefix(u.Fragment, "sha256=")
			if b, err := hex.DecodeString(pin); !ok || err != nil || len(b) != 32 {
				return nil, bad("the only fragment taken is #sha256= and 64 hex digits")
			}
			src.SHA256 = strings.ToLower(pin)
		}
		c := *u
		c.Fragment, c.RawFragment = "", ""
		src.URL = &c
		return src, nil
	}
	return nil, bad("unknown scheme %q (use a path, obj://, http:// or https://)", u.Scheme)
}

// Remote reports whether the source is a bundle fetched from elsewhere.
func (s *Source) Remote() bool { return s.Kind != KindFile }

// Location is where a remote bundle's signature says it is kept, and
// must be fetched from: obj://bucket/key, or the URL without credentials
// or fragment (scheme, host, port, path and query), so a bundle signed
// for one bucket, key or address is refused at any other. A local file's
// location is its path.
func (s *Source) Location() string {
	switch s.Kind {
	case KindObject:
		return "obj://" + s.Bucket + "/" + s.Key
	case KindHTTP:
		u := *s.URL
		u.User, u.Fragment, u.RawFragment = nil, "", ""
		return u.String()
	}
	return s.Path
}

// String is the source with any password and the fragment removed: what
// logs, metrics labels and audit lines show.
func (s *Source) String() string {
	switch s.Kind {
	case KindFile:
		return s.Path
	case KindObject:
		return "obj://" + s.Bucket + "/" + s.Key
	}
	return s.URL.Redacted()
}

// CacheName is a file name for the source's unpacked bundle below the cache
// directory: letters, digits, '-', '_' and '.' only.
func (s *Source) CacheName() string {
	var b strings.Builder
	for _, r := range string(s.Kind) + "_" + strings.TrimPrefix(strings.TrimPrefix(s.String(), "obj://"), "https://") {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		default:
			b.WriteRune('_')
		}
	}
	out := b.String()
	if len(out) > 100 {
		out = out[:100]
	}
	sum := sha256.Sum256([]byte(s.String()))
	return out + "-" + hex.EncodeToString(sum[:4])
}
