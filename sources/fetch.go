package sources

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ccm-fleet/ccm/internal/urlscope"
)

// DefaultFetchTimeout bounds one fetch when the caller's context has no
// deadline.
const DefaultFetchTimeout = time.Minute

// Fetched is a remote bundle as read: its bytes and what it carries.
type Fetched struct {
	// Data is the archive.
	Data []byte
	// SHA256 is Digest(Data).
	SHA256 string
	// Signature is the bundle's signature, nil when it has none.
	Signature *Signature
	// SignatureErr is why the carried signature could not be read (it
	// wraps ErrUnsigned or ErrBadSignature); nil when Signature is set.
	SignatureErr error
}

// Fetcher reads remote bundles. JS is needed for obj:// sources and HTTP
// for http(s) ones (nil: a client without redirects to other schemes).
type Fetcher struct {
	JS   jetstream.JetStream
	HTTP *http.Client
}

// Fetch reads the bundle of a remote source, bounded by MaxBundleBytes.
// Errors wrap ErrFetch; jetstream.ErrObjectNotFound is kept for a missing
// object.
func (f *Fetcher) Fetch(ctx context.Context, src *Source) (*Fetched, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultFetchTimeout)
		defer cancel()
	}
	switch src.Kind {
	case KindObject:
		return f.fetchObject(ctx, src)
	case KindHTTP:
		return f.fetchHTTP(ctx, src)
	}
	return nil, fmt.Errorf("%w: %s is not a remote source", ErrFetch, src)
}

// objectAttempts is how many times a fetch starts reading an object that
// was replaced while it was read.
const objectAttempts = 3

// objectStallCheck is how long the read of an object may make no progress
// before the fetch asks whether the object was replaced meanwhile: its
// chunks are then purged and the read would wait for ever.
var objectStallCheck = time.Second

// errObjectReplaced is why one attempt at an object ended early.
var errObjectReplaced = errors.New("the object was replaced while it was read")

func (f *Fetcher) fetchObject(ctx context.Context, src *Source) (*Fetched, error) {
	if f.JS == nil {
		return nil, fmt.Errorf("%w: %s: no NATS connection", ErrFetch, src)
	}
	obs, err := f.JS.ObjectStore(ctx, src.Bucket)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: object store: %w", ErrFetch, src, err)
	}
	for attempt := 1; ; attempt++ {
		data, info, err := fetchObjectOnce(ctx, obs, src.Key)
		if errors.Is(err, errObjectReplaced) && attempt < objectAttempts {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrFetch, src, err)
		}
		return fetched(data, func(k string) string { return info.Metadata[k] }), nil
	}
}

// fetchObjectOnce reads the object key once: its bytes and the meta they
// belong to.
func fetchObjectOnce(ctx context.Context, obs jetstream.ObjectStore, key string) ([]byte, *jetstream.ObjectInfo, error) {
	res, err := obs.Get(ctx, key)
	if err != nil {
		return nil, nil, err
	}
	info, err := res.Info()
	if err != nil {
		_ = res.Close()
		return nil, nil, err
	}
	if info.Size > MaxBundleBytes {
		_ = res.Close()
		return nil, nil, fmt.Errorf("%d bytes, the limit is %d", info.Size, MaxBundleBytes)
	}
	replaced := func() bool {
		now, err := obs.GetInfo(ctx, key)
		if errors.Is(err, jetstream.ErrObjectNotFound) {
			return true // deleted: the next attempt says so
		}
		return err == nil && now.NUID != info.NUID
	}
	data, err := readObject(ctx, res, replaced)
	if err != nil {
		return nil, nil, err
	}
	return data, info, nil
}

func (f *Fetcher) fetchHTTP(ctx context.Context, src *Source) (*Fetched, error) {
	client := f.HTTP
	if client == nil {
		client = &http.Client{CheckRedirect: sameSchemeRedirects}
	}
	// The source is fetched as configured, but a redirect or a name that
	// leads to a loopback, link-local or metadata address it does not
	// name is refused, as are the hops the context's guards refuse.
	guards := append(urlscope.Guards(ctx), urlscope.Configured(src.URL.String(), "source "+src.String()))
	client, err := urlscope.Client(client, guards)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrFetch, src, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, src.URL.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrFetch, src, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		// The URL in a client error may hold the password: name the source.
		var ue interface{ Unwrap() error }
		if errors.As(err, &ue) {
			err = ue.Unwrap()
		}
		return nil, fmt.Errorf("%w: %s: %w", ErrFetch, src, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%w: %s: HTTP status %s", ErrFetch, src, resp.Status)
	}
	if resp.ContentLength > MaxBundleBytes {
		return nil, fmt.Errorf("%w: %s: %d bytes, the limit is %d", ErrFetch, src, resp.ContentLength, MaxBundleBytes)
	}
	data, err := readBounded(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrFetch, src, err)
	}
	return fetched(data, resp.Header.Get), nil
}

// sameSchemeRedirects follows at most 5 redirects and never from https to
// http.
func sameSchemeRedirects(req *http.Request, via []*http.Request) error {
	if len(via) >= 5 {
		return errors.New("more than 5 redirects")
	}
	if via[0].URL.Scheme == "https" && req.URL.Scheme != "https" {
		return errors.New("redirect from https to " + req.URL.Scheme)
	}
	return nil
}

func fetched(data []byte, get func(string) string) *Fetched {
	f := &Fetched{Data: data, SHA256: Digest(data)}
	f.Signature, f.SignatureErr = SignatureFrom(get)
	return f
}

// readObject reads an object store result to its end, bounded, then
// closes it, and returns as soon as ctx ends. A read of such a result
// waits for its next chunk until the context's deadline without watching
// for cancellation, and closing the result waits for that read: an agent
// stopping while a chunk never came (seen when a bundle was replaced
// while it was read) waited for the whole fetch timeout. The reading
// goroutine ends by the deadline Fetch always sets.
//
// While the read makes no progress for objectStallCheck, replaced is
// asked whether the object now has other chunks; then the read ends with
// errObjectReplaced at once instead of at the deadline.
func readObject(ctx context.Context, res jetstream.ObjectResult, replaced func() bool) ([]byte, error) {
	type read struct {
		data []byte
		err  error
	}
	done := make(chan read, 1)
	var progress atomic.Int64
	go func() {
		data, err := readBounded(&countingReader{r: res, n: &progress})
		_ = res.Close()
		done <- read{data, err}
	}()
	tick := time.NewTicker(objectStallCheck)
	defer tick.Stop()
	seen := int64(0)
	for {
		select {
		case r := <-done:
			return r.data, r.err
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
			if n := progress.Load(); n != seen {
				seen = n
				continue
			}
			if replaced() {
				return nil, errObjectReplaced
			}
		}
	}
}

// countingReader adds what it reads to n.
type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	k, err := c.r.Read(p)
	c.n.Add(int64(k))
	return k, err
}

// readBounded reads r to its end, refusing more than MaxBundleBytes.
func readBounded(r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxBundleBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxBundleBytes {
		return nil, fmt.Errorf("larger than %d bytes", MaxBundleBytes)
	}
	return data, nil
}
