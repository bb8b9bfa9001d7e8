package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/ccm-fleet/ccm/continuous"
	"github.com/ccm-fleet/ccm/manifest"
	"github.com/ccm-fleet/ccm/resources/engine"
	"github.com/ccm-fleet/ccm/sources"
	"github.com/ccm-fleet/ccm/trust/policy"
	"github.com/ccm-fleet/ccm/trust/scope"
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

// appliedBundle is a remote manifest bundle fetched, verified and
// unpacked for "apply".
type appliedBundle struct {
	m *manifest.Manifest
	// signer is the policy's signer of the bundle; nil when its
	// #sha256= pin vouches for it.
	signer *policy.Signer
	// name is the source without password or fragment, for messages.
	name string
}

// fetchBundle reads the bundle ref names (obj://bucket/key, or an
// http(s) URL of a gzipped tar with manifest.yaml at its top), as CCM's
// apply does, with the continuous agent's fetcher and verification:
// bounded in size and time, every redirect hop judged by the URL scopes,
// and applied only when pinned with #sha256= (https) or signed by a key
// of pol. It is unpacked below a new temporary directory, removed by the
// returned cleanup. Errors wrap sources.ErrSource, sources.ErrFetch,
// continuous.ErrRefused, sources.ErrBundle or ErrNoConnection.
//
// A signed bundle older than the newest one taken from the same source
// (by this command or by ccm-agent agent, kept below cacheDir) is refused:
// signed state never goes backwards. The same bundle again is taken.
func fetchBundle(ctx context.Context, ref string, pol *policy.Policy, conn *lazyKV, cacheDir string, log *slog.Logger) (*appliedBundle, func(), error) {
	src, err := sources.Parse(ref)
	if err != nil {
		return nil, nil, err
	}
	f := &sources.Fetcher{}
	if src.Kind == sources.KindObject {
		if f.JS, err = conn.jetStream(ctx, src.String()); err != nil {
			return nil, nil, err
		}
	}
	got, err := f.Fetch(ctx, src)
	if err != nil {
		return nil, nil, err
	}
	signer, _, err := continuous.VerifyBundle(src, got, pol, continuous.ReadHighWater(cacheDir, src))
	if errors.Is(err, sources.ErrUnsigned) {
		return nil, nil, fmt.Errorf("manifest %s: %w (pin an https:// bundle with #sha256=HEX, or sign it with ccm-orch manifest put --key and give --policy)", src, err)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("manifest %s: %w", src, err)
	}
	// The bundle taken last may be applied again, an older one not
	// (VerifyBundle refused it).
	if taken := continuous.ReadHighWater(cacheDir, src); signer != nil && got.Signature.Created.After(taken.Created) {
		if err := continuous.KeepHighWater(cacheDir, src, continuous.HighWater{Created: got.Signature.Created, SHA256: got.SHA256}); err != nil {
			log.Warn("could not keep the signed bundle's time: an older signed bundle of this source would be taken again", "manifest", src.String(), "path", continuous.HighWaterPath(cacheDir, src), "error", err)
		}
	}
	tmp, err := os.MkdirTemp("", "ccm-apply-")
	if err != nil {
		return nil, nil, fmt.Errorf("manifest %s: %w", src, err)
	}
	cleanup := func() { _ = os.RemoveAll(tmp) }
	dir := filepath.Join(tmp, "bundle")
	if err := sources.Unpack(got.Data, dir); err != nil {
		cleanup()
		return nil, nil, fmt.Errorf("manifest %s: %w", src, err)
	}
	m, err := manifest.Load(filepath.Join(dir, sources.ManifestFile))
	if err != nil {
		cleanup()
		return nil, nil, fmt.Errorf("manifest %s: %w", src, err)
	}
	return &appliedBundle{m: m, signer: signer, name: src.String()}, cleanup, nil
}

// signerGuard is the guard of a signed bundle's run, as the continuous
// agent's: the request as a whole (noop_only, hosts), then every resource
// as it will run, by the signer's scopes.
func signerGuard(s *policy.Signer, noop bool, facts map[string]any) (func(*engine.Prepared) error, error) {
	if d, refused := policy.FirstRefusal(s.CheckRequest(noop, facts)); refused {
		return nil, fmt.Errorf("%w: %s", continuous.ErrRefused, s.RefusalMessage("", d))
	}
	r := scope.HostResolver()
	return func(p *engine.Prepared) error {
		if d, refused := policy.FirstRefusal(s.Arm(p, r)); refused {
			return fmt.Errorf("%w: %s", continuous.ErrRefused, s.RefusalMessage(p.Type.Name()+"#"+p.Name(), d))
		}
		return nil
	}, nil
}
