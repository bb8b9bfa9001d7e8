package archivehttp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/ccm-fleet/ccm/internal/urlscope"
	"github.com/ccm-fleet/ccm/providers/internal/safefs"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/archivetype"
)

// ArchiveMode is the mode of a downloaded archive file: read-write for its
// owner only, as CCM writes it.
const ArchiveMode os.FileMode = 0o600

// maxDrain bounds how much of an error response is read before closing it.
const maxDrain = 64 << 10

// Download fetches props.URL into a temporary file beside props.Name,
// created with O_CREAT|O_EXCL|O_NOFOLLOW in a handle on its directory
// (safefs.OpenParent: untrusted links on the way wrap filetype.ErrSymlink)
// and renamed within that handle, owned by props.Owner and props.Group
// before any content is written, copies at most the provider's download
// limit, verifies the checksum when one is set and then renames the file
// into place. On any failure the temporary file is removed and props.Name is
// untouched. Basic authentication uses props.Username and props.Password
// (or the URL's userinfo); props.Headers are added to the request. A
// status other than 200 wraps ErrHTTPStatus, a wrong checksum
// ErrChecksumMismatch, an oversized body ErrDownloadTooLarge, a body that
// does not begin as an archive of the name's format ErrNotArchive. The URL
// guards of ctx (urlscope.Guards: a signer's net.urls, set by the agent)
// judge the URL, each redirect hop and each address dialled; a refusal
// wraps resources.ErrForbidden. Errors never contain credentials. Without a deadline on ctx the provider's timeout
// applies.
func (p *Provider) Download(ctx context.Context, props *archivetype.Properties) error {
	if _, ok := archivetype.FormatOf(props.Name); !ok {
		return fmt.Errorf("%s: %w", props.Name, archivetype.ErrUnsupportedFormat)
	}
	uid, gid, err := lookupIDs(props.Owner, props.Group)
	if err != nil {
		return err
	}
	ctx, cancel := p.cfg.withTimeout(ctx)
	defer cancel()

	safeURL := archivetype.RedactURL(props.URL)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, props.URL, nil)
	if err != nil {
		return fmt.Errorf("GET %s: not a valid request URL", safeURL)
	}
	if props.Username != "" {
		req.SetBasicAuth(props.Username, props.Password)
	}
	for k, v := range props.Headers {
		if http.CanonicalHeaderKey(k) == "Host" {
			req.Host = v
			continue
		}
		req.Header.Add(k, v)
	}

	// A signer's resource fetches only what its scopes allow: the URL,
	// every redirect hop and every address dialled are judged.
	guards := urlscope.Guards(ctx)
	if err := urlscope.Check(guards, props.URL, safeURL); err != nil {
		return fmt.Errorf("GET %s: %w: %w", safeURL, resources.ErrForbidden, err)
	}
	client, err := urlscope.Client(p.cfg.client, guards)
	if err != nil {
		return fmt.Errorf("GET %s: %w: %w", safeURL, resources.ErrForbidden, err)
	}
	log := resources.Logger(ctx, p.log).With("name", props.Name, "url", safeURL)
	log.Debug("downloading archive")
	resp, err := client.Do(req)
	if err != nil {
		if urlscope.IsRefused(err) {
			return fmt.Errorf("GET %s: %w: %w", safeURL, resources.ErrForbidden, unwrapURLError(err))
		}
		return fmt.Errorf("GET %s: %w", safeURL, unwrapURLError(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.CopyN(io.Discard, resp.Body, maxDrain)
		return fmt.Errorf("GET %s: %w %d (%s)", safeURL, ErrHTTPStatus, resp.StatusCode, http.StatusText(resp.StatusCode))
	}
	if resp.ContentLength > p.cfg.maxDownload {
		return fmt.Errorf("GET %s: %w: Content-Length %d is more than %d bytes", safeURL, ErrDownloadTooLarge, resp.ContentLength, p.cfg.maxDownload)
	}
	sum, size, err := p.writeAtomic(props, resp.Body, uid, gid)
	if err != nil {
		return fmt.Errorf("GET %s: %w", safeURL, err)
	}
	log.Info("downloaded archive", "bytes", size, "sha256", sum)
	return nil
}

// writeAtomic copies body into a temporary file beside props.Name and
// renames it into place once complete and verified. It returns the SHA-256
// and the size written.
func (p *Provider) writeAtomic(props *archivetype.Properties, body io.Reader, uid, gid int) (sum string, size int64, err error) {
	d, base, err := safefs.OpenParent(props.Name)
	if err != nil {
		return "", 0, fmt.Errorf("open directory of %s: %w", props.Name, err)
	}
	defer d.Close()
	tmp, tmpName, err := d.CreateTemp(base + "-")
	if err != nil {
		return "", 0, fmt.Errorf("create temporary file: %w", err)
	}
	shown := d.Join(tmpName)
	renamed := false
	defer func() {
		if !renamed {
			_ = tmp.Close()
			_ = d.Remove(tmpName)
		}
	}()

	if err := tmp.Chown(uid, gid); err != nil {
		return "", 0, fmt.Errorf("set owner of %s: %w", shown, err)
	}
	if err := tmp.Chmod(ArchiveMode); err != nil {
		return "", 0, fmt.Errorf("set mode of %s: %w", shown, err)
	}
	h := sha256.New()
	head := &headWriter{}
	size, err = io.Copy(io.MultiWriter(tmp, h, head), io.LimitReader(body, p.cfg.maxDownload+1))
	if err != nil {
		return "", 0, fmt.Errorf("write %s: %w", shown, err)
	}
	if size > p.cfg.maxDownload {
		return "", 0, fmt.Errorf("%w: more than %d bytes", ErrDownloadTooLarge, p.cfg.maxDownload)
	}
	if err := tmp.Sync(); err != nil {
		return "", 0, fmt.Errorf("write %s: %w", shown, err)
	}
	if err := tmp.Close(); err != nil {
		return "", 0, fmt.Errorf("write %s: %w", shown, err)
	}
	sum = hex.EncodeToString(h.Sum(nil))
	if props.Checksum != "" && !strings.EqualFold(sum, props.Checksum) {
		return "", 0, fmt.Errorf("%w, expected %q got %q", ErrChecksumMismatch, strings.ToLower(props.Checksum), sum)
	}
	if f, _ := archivetype.FormatOf(props.Name); !f.Looks(head.b) {
		// Kept, it would be read back (a diff, a checksum): what a server
		// answered is not an archive the signer may keep.
		return "", 0, fmt.Errorf("%w (%s, by its name)", ErrNotArchive, f)
	}
	if err := d.Rename(tmpName, base); err != nil {
		return "", 0, fmt.Errorf("rename into place: %w", err)
	}
	renamed = true
	return sum, size, nil
}

// headWriter keeps the first archivetype.HeadBytes bytes written.
type headWriter struct{ b []byte }

func (w *headWriter) Write(p []byte) (int, error) {
	if n := archivetype.HeadBytes - len(w.b); n > 0 {
		w.b = append(w.b, p[:min(n, len(p))]...)
	}
	return len(p), nil
}

// unwrapURLError drops the *url.Error wrapper the HTTP client adds: it
// repeats the URL, including the user name. The caller names the redacted
// URL instead.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) && ue.Err != nil {
		return ue.Err
	}
	return err
}
