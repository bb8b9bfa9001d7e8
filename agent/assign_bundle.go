package agent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ccm-fleet/ccm/internal/filecheck"
	"github.com/ccm-fleet/ccm/manifest"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/sources"
	"github.com/ccm-fleet/ccm/trust/policy"
)

// bundleFetchTimeout bounds the fetch of an assignment's bundle (the
// assigner waits for it: a revision is admitted at once).
const bundleFetchTimeout = 20 * time.Second

// bundleBody fetches the object store bundle an assignment names and
// admits it as the assignment's manifest: the tarball must be the one the
// signed assignment names (its SHA-256), carry a signature that verifies
// for its name, by a signer the policy trusts (as `ccm-agent agent`
// checks a bundle), and unpack and parse like any bundle. The body it
// returns is judged like an inline manifest, and also by the bundle's
// signer (vouch). Refusals name the bundle.
func (s *assigner) bundleBody(ref *protocol.AssignmentBundle) (*body, *protocol.Error) {
	a := s.a
	ctx, cancel := context.WithTimeout(context.Background(), bundleFetchTimeout)
	defer cancel()
	src, err := sources.Parse(ref.URL)
	if err != nil || src.Kind != sources.KindObject {
		return nil, protocol.NewError(protocol.CodeBadRequest, "bundle %.100s: not an obj://bucket/key bundle", ref.URL)
	}
	f, err := (&sources.Fetcher{JS: a.setup.js}).Fetch(ctx, src)
	switch {
	case errors.Is(err, jetstream.ErrObjectNotFound), errors.Is(err, jetstream.ErrBucketNotFound):
		return nil, protocol.NewError(protocol.CodeBadRequest, "bundle %s: not found in the object store: nothing was run", src)
	case err != nil:
		return nil, protocol.NewError(protocol.CodeInternal, "bundle %s: could not be fetched: %s", src, err)
	case f.SHA256 != ref.SHA256:
		return nil, protocol.NewError(protocol.CodeUnauthenticated, "bundle %s: its sha256 is %s, the assignment names %s: it was replaced since it was assigned", src, f.SHA256, ref.SHA256)
	case f.Signature == nil:
		return nil, protocol.NewError(protocol.CodeUnauthenticated, "bundle %s: %s: bundles are run only when signed by a key the policy trusts", src, f.SignatureErr)
	}
	if err := f.Signature.Verify(f.Data, src.Location()); err != nil {
		return nil, protocol.NewError(protocol.CodeUnauthenticated, "bundle %s: %s", src, err)
	}
	vouch, ok := a.setup.policy.SignerByKey(f.Signature.Signer)
	if !ok && !a.setup.insecure {
		return nil, protocol.NewError(protocol.CodeUnauthenticated, "bundle %s: signer %s is not trusted by this agent's policy", src, f.Signature.Signer)
	}
	bundle, m, e := readBundle(src, f.Data)
	if e != nil {
		return nil, e
	}
	b, _ := newBody(policy.ManifestBody(bundle, m), nil)
	b.vouch = vouch
	return b, nil
}

// readBundle unpacks a bundle's tarball into a private directory, parses
// its manifest there (once) and reads the files its relative sources name
// into memory; the directory is removed before it returns.
func readBundle(src *sources.Source, data []byte) (*manifest.Bundle, *manifest.Manifest, *protocol.Error) {
	parent, err := os.MkdirTemp(os.TempDir(), manifestTempPattern)
	if err != nil {
		return nil, nil, protocol.NewError(protocol.CodeInternal, "bundle %s: %s", src, err)
	}
	defer func() { _ = os.RemoveAll(parent) }()
	dir := filepath.Join(parent, "bundle")
	if err := sources.Unpack(data, dir); err != nil {
		return nil, nil, protocol.NewError(protocol.CodeBadRequest, "bundle %s: %s", src, err)
	}
	doc, err := filecheck.ReadBounded(filepath.Join(dir, sources.ManifestFile), manifest.DefaultMaxBytes)
	if err != nil {
		return nil, nil, protocol.NewError(protocol.CodeBadRequest, "bundle %s: %s: %s", src, sources.ManifestFile, err)
	}
	m, err := manifest.Parse(doc, manifest.ParseOptions{WorkingDir: dir})
	if err != nil {
		return nil, nil, protocol.NewError(protocol.CodeBadRequest, "bundle %s: %s", src, manifestMessage(err))
	}
	bundle, err := manifest.NewBundle(m)
	if err != nil {
		return nil, nil, protocol.NewError(protocol.CodeBadRequest, "bundle %s: %s", src, manifestMessage(err))
	}
	return bundle, m, nil
}
