package continuous

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ccm-fleet/ccm/internal/filecheck"
	"github.com/ccm-fleet/ccm/internal/urlscope"
	"github.com/ccm-fleet/ccm/manifest"
	"github.com/ccm-fleet/ccm/sources"
)

// MaxDataBytes bounds an external data document.
const MaxDataBytes = 1 << 20

// DataURL is a parsed external_data_url.
type DataURL struct {
	// Scheme is file, kv, http or https.
	Scheme string
	// Path is a file:// document's absolute path.
	Path string
	// Bucket and Key locate a kv:// document.
	Bucket, Key string
	// URL is an http(s) document's address (fragment removed).
	URL *url.URL
	// SHA256 is the hex digest an http(s) document is pinned to
	// ("#sha256=..." on the URL, as manifest sources are); "" when not
	// pinned.
	SHA256 string
}

// Pinned reports whether the document is a plain path or file:// (on
// this host) or an http(s) URL pinned with #sha256=: bytes nothing else
// can change under the reader.
func (d *DataURL) Pinned() bool { return d.Scheme == "file" || d.SHA256 != "" }

// String is the URL with any password removed.
func (d *DataURL) String() string {
	switch d.Scheme {
	case "file":
		return d.Path
	case "kv":
		return "kv://" + d.Bucket + "/" + d.Key
	}
	return d.URL.Redacted()
}

// ParseDataURL parses a data document's location: an absolute path (as
// CCM writes it) or file:///path, kv://bucket/key, or an http(s) URL
// (user:password@ for basic auth, optionally #sha256=HEX to pin the
// document's digest). Errors wrap ErrDataURL.
func ParseDataURL(s string) (*DataURL, error) {
	shown := s
	if u, err := url.Parse(s); err == nil && u.User != nil {
		shown = u.Redacted() // errors never show a password
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %.80q: %s", ErrDataURL, shown, fmt.Sprintf(format, args...))
	}
	switch {
	case s == "":
		return nil, bad("empty")
	case len(s) > sources.MaxSourceLength:
		return nil, bad("%d characters, the limit is %d", len(s), sources.MaxSourceLength)
	case strings.ContainsAny(s, "\x00\n\r"):
		return nil, bad("control characters")
	}
	if !strings.Contains(s, "://") {
		if !filepath.IsAbs(s) {
			return nil, bad("a path must be absolute (or use file://, kv:// or http(s)://)")
		}
		return &DataURL{Scheme: "file", Path: filepath.Clean(s)}, nil
	}
	u, err := url.Parse(s)
	if err != nil {
		return nil, bad("%v", err)
	}
	switch u.Scheme {
	case "file":
		if u.Host != "" || !filepath.IsAbs(u.Path) {
			return nil, bad("file:// needs an absolute path")
		}
		return &DataURL{Scheme: "file", Path: filepath.Clean(u.Path)}, nil
	case "kv":
		key := strings.TrimPrefix(u.Path, "/")
		if u.Host == "" || key == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
			return nil, bad("use kv://bucket/key")
		}
		return &DataURL{Scheme: "kv", Bucket: u.Host, Key: key}, nil
	case "http", "https":
		if u.Host == "" {
			return nil, bad("no host")
		}
		d := &DataURL{Scheme: u.Scheme}
		if u.Fragment != "" {
			pin, ok := strings.CutPrefix(u.Fragment, "sha256=")
			if b, err := hex.DecodeString(pin); !ok || err != nil || len(b) != 32 {
				return nil, bad("the only fragment taken is #sha256= and 64 hex digits")
			}
			d.SHA256 = strings.ToLower(pin)
		}
		c := *u
		c.Fragment, c.RawFragment = "", ""
		d.URL = &c
		return d, nil
	}
	return nil, bad("unknown scheme %q (use an absolute path, file://, kv:// or http(s)://)", u.Scheme)
}

// DataSource reads the external data document.
type DataSource struct {
	URL  *DataURL
	JS   jetstream.JetStream
	HTTP *http.Client
	// Log receives the warnings CCM logs about the document (an
	// annotation it does not understand); nil discards them.
	Log *slog.Logger
}

// Resolve reads the document and resolves it against facts as a
// hierarchy document (data, hierarchy and overrides keys, as in a
// manifest): the data a manifest's own data is overlaid with.
func (d *DataSource) Resolve(ctx context.Context, facts map[string]any) (map[string]any, error) {
	raw, err := d.Read(ctx)
	if err != nil {
		return nil, fmt.Errorf("external data: %w", err)
	}
	m, err := manifest.Parse(raw, manifest.ParseOptions{MaxBytes: MaxDataBytes})
	if err != nil {
		return nil, fmt.Errorf("external data %s: %w", d.URL, err)
	}
	manifest.LogAnnotationWarnings(d.Log, m.AnnotationWarnings())
	r, err := m.Resolve(manifest.RunOptions{Facts: facts})
	if err != nil {
		return nil, fmt.Errorf("external data %s: %w", d.URL, err)
	}
	return r.Data, nil
}

// DefaultDataTimeout bounds one read of a remote document when the
// caller's context has no deadline.
const DefaultDataTimeout = time.Minute

// Read reads the document, at most MaxDataBytes, within the context's
// deadline (DefaultDataTimeout when it has none), and checks an http(s)
// document against its #sha256= pin. Errors wrap ErrData, and
// sources.ErrChecksum for a digest other than the pin.
func (d *DataSource) Read(ctx context.Context) ([]byte, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultDataTimeout)
		defer cancel()
	}
	b, err := d.read(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrData, d.URL, err)
	}
	if d.URL.SHA256 != "" {
		if got := sources.Digest(b); got != d.URL.SHA256 {
			return nil, fmt.Errorf("%w: %s: %w: sha256 %s, pinned %s", ErrData, d.URL, sources.ErrChecksum, got, d.URL.SHA256)
		}
	}
	return b, nil
}

func (d *DataSource) read(ctx context.Context) ([]byte, error) {
	switch d.URL.Scheme {
	case "file":
		return filecheck.ReadBounded(d.URL.Path, MaxDataBytes)
	case "kv":
		if d.JS == nil {
			return nil, fmt.Errorf("no NATS connection")
		}
		kv, err := d.JS.KeyValue(ctx, d.URL.Bucket)
		if err != nil {
			return nil, err
		}
		e, err := kv.Get(ctx, d.URL.Key)
		if err != nil {
			return nil, err
		}
		if len(e.Value()) > MaxDataBytes {
			return nil, fmt.Errorf("%d bytes, the limit is %d", len(e.Value()), MaxDataBytes)
		}
		return e.Value(), nil
	}
	client := d.HTTP
	if client == nil {
		client = http.DefaultClient
	}
	// The document is fetched as configured, but a redirect or a name
	// that leads to a loopback, link-local or metadata address it does
	// not name is refused.
	client, err := urlscope.Client(client, []*urlscope.Guard{urlscope.Configured(d.URL.URL.String(), "external data "+d.URL.String())})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.URL.URL.String(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP status %s", resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, MaxDataBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxDataBytes {
		return nil, fmt.Errorf("larger than %d bytes", MaxDataBytes)
	}
	return b, nil
}
