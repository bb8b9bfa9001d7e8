package fileposix

import (
	"context"
	"path/filepath"

	"github.com/ccm-fleet/ccm/providers/internal/safefs"
	"github.com/ccm-fleet/ccm/resources/filetype"
)

var _ filetype.Binder = (*Provider)(nil)

// Bind opens name's parent directory once (see openParent: every component
// from "/" with O_NOFOLLOW) for one apply of the file resource, and returns
// a context holding that handle, with the function that closes it. Status,
// ReadContent (the diff) and Store of name by this provider under that
// context work relative to the held handle instead of walking again, so
// the write happens in the very directory the status looked at, as Store
// alone guarantees within its own call: nothing is resolved by path between
// the status, the write and the status after it. A directory on the way
// renamed or swapped for a link during the apply does not redirect the
// write; the apply acts on the directory it opened.
//
// The handle travels in the context rather than in a bound provider, so a
// provider that wraps this one (embedding it and overriding a method) keeps
// its overrides. When the parent cannot be opened (missing, not a
// directory, an untrusted link, "/" itself) Bind holds nothing: the calls
// walk again and report the error as they always do. The other calls
// (CreateDirectory, SetAttributes, Remove, OpenSource), the calls on
// another path and another provider's calls ignore the handle. The context
// must not be used after the release.
func (p *Provider) Bind(ctx context.Context, name string) (context.Context, func()) {
	if ctx.Err() != nil || filepath.Clean(name) == "/" {
		return ctx, func() {}
	}
	d, base, err := p.parentOf(name)
	if err != nil {
		return ctx, func() {}
	}
	h := &heldParent{p: p, name: name, d: d, base: base}
	return context.WithValue(ctx, heldKey{}, h), func() { _ = d.Close() }
}

// heldKey is the context key of the heldParent Bind holds.
type heldKey struct{}

// heldParent is the parent directory's handle d of the path name, opened
// by Bind for one apply by p.
type heldParent struct {
	p    *Provider
	name string
	d    *safefs.Dir
	base string
}

// held returns the parent directory's handle and name's last component
// when ctx holds them for p and name (see Bind).
func (p *Provider) held(ctx context.Context, name string) (*safefs.Dir, string, bool) {
	h, ok := ctx.Value(heldKey{}).(*heldParent)
	if !ok || h.p != p || h.name != name {
		return nil, "", false
	}
	return h.d, h.base, true
}
