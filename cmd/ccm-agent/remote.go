package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/ccm-fleet/ccm/continuous"
	"github.com/ccm-fleet/ccm/manifest"
)

// ErrUnpinned is wrapped when a remote document that changes this host
// (ensure --hiera, apply --hiera) is not pinned with #sha256=.
var ErrUnpinned = errors.New("a remote data document must be pinned")

// hieraRef says how a hiera document named on the command line may be
// read.
type hieraRef struct {
	// flag names the document in errors ("--hiera", "hiera").
	flag string
	// requirePin refuses an http(s) document without #sha256=: its data
	// changes this host.
	requirePin bool
	// conn reads kv:// documents; nil refuses them.
	conn *lazyKV
}

// isRemoteRef reports whether ref is a URL rather than a path.
func isRemoteRef(ref string) bool { return strings.Contains(ref, "://") }

// load reads and parses the hiera document ref: a path (as before), or,
// as CCM's hiera page documents, file://, http(s):// (user:password@ for
// basic auth; #sha256=HEX pins it) or kv://bucket/key. A remote document
// is read within a minute and at most 1 MiB, a redirect to a loopback,
// link-local or metadata address it does not name is refused. Errors
// wrap continuous.ErrDataURL, continuous.ErrData (and sources.ErrChecksum
// for another digest), ErrUnpinned or ErrNoConnection.
func (h hieraRef) load(ctx context.Context, ref string) (*manifest.Manifest, error) {
	if !isRemoteRef(ref) {
		m, err := manifest.Load(ref)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", h.flag, ref, err)
		}
		return m, nil
	}
	u, err := continuous.ParseDataURL(ref)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", h.flag, err)
	}
	src := &continuous.DataSource{URL: u}
	switch {
	case u.Scheme == "file":
		m, err := manifest.Load(u.Path)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", h.flag, u, err)
		}
		return m, nil
	case u.Scheme == "kv" && h.conn == nil:
		return nil, fmt.Errorf("%s %s: %w: kv:// is read by hiera parse only; here give a path or an https:// URL pinned with #sha256=", h.flag, u, continuous.ErrDataURL)
	case u.Scheme == "kv":
		if src.JS, err = h.conn.jetStream(ctx, u.String()); err != nil {
			return nil, fmt.Errorf("%s: %w", h.flag, err)
		}
	case h.requirePin && u.SHA256 == "":
		return nil, fmt.Errorf("%s %s: %w: add #sha256= and the document's 64 hex digit SHA-256 (sha256sum FILE), as for manifest sources", h.flag, u, ErrUnpinned)
	}
	body, err := src.Read(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", h.flag, err)
	}
	cwd, err := os.Getwd()
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", h.flag, u, err)
	}
	m, err := manifest.Parse(body, manifest.ParseOptions{WorkingDir: cwd, MaxBytes: continuous.MaxDataBytes})
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", h.flag, u, err)
	}
	return m, nil
}
