package archivehttp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/archivetype"
)

// ProviderName is the provider's name, as used in provider:.
const ProviderName = "http"

// Defaults of the provider's limits.
const (
	// DefaultTimeout bounds one download or one extraction when the caller's
	// context has no deadline.
	DefaultTimeout = time.Minute
	// DefaultMaxDownloadBytes is the largest archive downloaded (1 GiB).
	DefaultMaxDownloadBytes int64 = 1 << 30
	// DefaultMaxExtractBytes is the most content extracted from one archive (4 GiB).
	DefaultMaxExtractBytes int64 = 4 << 30
	// DefaultMaxEntries is the most entries one archive may hold.
	DefaultMaxEntries = 100_000
	// maxRedirects bounds how many redirects a download follows.
	maxRedirects = 10
)

// config holds the settings shared by the factory and its providers.
type config struct {
	client      *http.Client
	timeout     time.Duration
	maxDownload int64
	maxExtract  int64
	maxEntries  int
}

// Option adjusts a Factory.
type Option func(*config)

// WithHTTPClient makes downloads use c (for example one trusting a test CA).
func WithHTTPClient(c *http.Client) Option {
	return func(cfg *config) {
		if c != nil {
			cfg.client = c
		}
	}
}

// WithTimeout sets the timeout applied to a download or an extraction whose
// context has no deadline; d <= 0 keeps DefaultTimeout.
func WithTimeout(d time.Duration) Option {
	return func(cfg *config) {
		if d > 0 {
			cfg.timeout = d
		}
	}
}

// WithMaxDownloadBytes sets the largest archive downloaded; n <= 0 keeps the default.
func WithMaxDownloadBytes(n int64) Option {
	return func(cfg *config) {
		if n > 0 {
			cfg.maxDownload = n
		}
	}
}

// WithMaxExtractBytes sets the most content extracted from one archive; n <= 0
// keeps the default.
func WithMaxExtractBytes(n int64) Option {
	return func(cfg *config) {
		if n > 0 {
			cfg.maxExtract = n
		}
	}
}

// WithMaxEntries sets the most entries one archive may hold; n <= 0 keeps the default.
func WithMaxEntries(n int) Option {
	return func(cfg *config) {
		if n > 0 {
			cfg.maxEntries = n
		}
	}
}

// Factory makes http archive providers.
type Factory struct {
	log *slog.Logger
	cfg config
}

var _ resources.Factory = (*Factory)(nil)

// NewFactory returns the http archive provider factory. log receives the
// providers' progress (nil discards it); opts override the HTTP client, the
// timeout and the size and entry limits.
func NewFactory(log *slog.Logger, opts ...Option) *Factory {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cfg := config{
		client:      &http.Client{CheckRedirect: checkRedirect},
		timeout:     DefaultTimeout,
		maxDownload: DefaultMaxDownloadBytes,
		maxExtract:  DefaultMaxExtractBytes,
		maxEntries:  DefaultMaxEntries,
	}
	for _, o := range opts {
		o(&cfg)
	}
	return &Factory{log: log.With("provider", "archive/"+ProviderName), cfg: cfg}
}

// Type returns "archive".
func (f *Factory) Type() string { return protocol.TypeArchive }

// Name returns "http".
func (f *Factory) Name() string { return ProviderName }

// IsManageable accepts archive properties whose URL is http or https and
// whose URL path and name end in a supported archive extension, with
// priority 1. Extraction is in-process, so no tool is needed on the host.
func (f *Factory) IsManageable(_ map[string]any, props resources.Properties) (bool, int, error) {
	p, ok := props.(*archivetype.Properties)
	if !ok {
		return false, 0, fmt.Errorf("properties are %T, not archive properties", props)
	}
	u, err := url.Parse(p.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return false, 0, nil
	}
	if _, ok := archivetype.FormatOf(u.Path); !ok {
		return false, 0, nil
	}
	if _, ok := archivetype.FormatOf(p.Name); !ok {
		return false, 0, nil
	}
	return true, 1, nil
}

// New returns a provider sharing the factory's client and limits.
func (f *Factory) New() (resources.Provider, error) {
	return &Provider{log: f.log, cfg: f.cfg}, nil
}

// checkRedirect follows at most maxRedirects redirects and never from https
// to plain http, which would expose credentials and content.
func checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		return fmt.Errorf("stopped after %d redirects", maxRedirects)
	}
	if len(via) > 0 && via[len(via)-1].URL.Scheme == "https" && req.URL.Scheme != "https" {
		return errors.New("refusing redirect from https to http")
	}
	return nil
}

// withTimeout applies the configured timeout when ctx has no deadline.
func (c *config) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, c.timeout)
}
