package continuous

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ccm-fleet/ccm/internal/filecheck"
	"github.com/ccm-fleet/ccm/internal/urlscope"
	"github.com/ccm-fleet/ccm/manifest"
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
	// URL is an http(s) document's address.
	URL *url.URL
}

// String is the URL with any password removed.
func (d *DataURL) String() string {
	switch d.Scheme {
	case "file":
		return "file://" + d.Path
	case "kv":
		return "kv://" + d.Bucket + "/" + d.Key
	}
	return d.URL.Redacted()
}

// ParseDataURL parses file:///path, kv://bucket/key or an http(s) URL.
func ParseDataURL(s string) (*DataURL, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("%.80q: %w", s, err)
	}
	switch u.Scheme {
	case "file":
		if u.Host != "" || !filepath.IsAbs(u.Path) {
			return nil, fmt.Errorf("%.80q: file:// needs an absolute path", s)
		}
		return &DataURL{Scheme: "file", Path: filepath.Clean(u.Path)}, nil
	case "kv":
		key := strings.TrimPrefix(u.Path, "/")
		if u.Host == "" || key == "" || u.User != nil {
			return nil, fmt.Errorf("%.80q: use kv://bucket/key", s)
		}
		return &DataURL{Scheme: "kv", Bucket: u.Host, Key: key}, nil
	case "http", "https":
		if u.Host == "" {
			return nil, fmt.Errorf("%.80q: no host", s)
		}
		return &DataURL{Scheme: u.Scheme, URL: u}, nil
	}
	return nil, fmt.Errorf("%.80q: use file://, kv:// or http(s)://", s)
}

// DataSource reads the external data document.
type DataSource struct {
	URL  *DataURL
	JS   jetstream.JetStream
	HTTP *http.Client
}

// Resolve reads the document and resolves it against facts as a
// hierarchy document (data, hierarchy and overrides keys, as in a
// manifest): the data a manifest's own data is overlaid with.
func (d *DataSource) Resolve(ctx context.Context, facts map[string]any) (map[string]any, error) {
	raw, err := d.read(ctx)
	if err != nil {
		return nil, fmt.Errorf("external data %s: %w", d.URL, err)
	}
	m, err := manifest.Parse(raw, manifest.ParseOptions{MaxBytes: MaxDataBytes})
	if err != nil {
		return nil, fmt.Errorf("external data %s: %w", d.URL, err)
	}
	r, err := m.Resolve(manifest.RunOptions{Facts: facts})
	if err != nil {
		return nil, fmt.Errorf("external data %s: %w", d.URL, err)
	}
	return r.Data, nil
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
