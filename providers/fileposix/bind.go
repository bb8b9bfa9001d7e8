package fileposix

import (
	"context"
	"path/filepath"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/providers/internal/safefs"
	"github.com/ccm-fleet/ccm/resources/filetype"
)

var _ filetype.Binder = (*Provider)(nil)

// Bind opens name's parent directory once (see openParent: every component
// from "/" with O_NOFOLLOW) for one apply of the file resource, and returns
// a provider whose Status, ReadContent (the diff) and Store of name work
// relative to that one handle, with the function that closes it. The write therefore happens in
// the very directory the status looked at, as Store alone guarantees within
// its own call: nothing is resolved by path between the status, the write
// and the status after it. A directory on the way renamed or swapped for a
// link during the apply does not redirect the write; the apply acts on the
// directory it opened.
//
// When the parent cannot be opened (missing, not a directory, an untrusted
// link, "/" itself) Bind holds nothing and returns p, whose calls walk again
// and report the error as they always do. The other calls (CreateDirectory,
// SetAttributes, Remove, OpenSource) and the calls on another path are p's
// own.
func (p *Provider) Bind(ctx context.Context, name string) (filetype.Provider, func()) {
	if ctx.Err() != nil || filepath.Clean(name) == "/" {
		return p, func() {}
	}
	d, base, err := p.parentOf(name)
	if err != nil {
		return p, func() {}
	}
	b := &boundFile{Provider: p, name: name, d: d, base: base}
	return b, func() { _ = d.Close() }
}

// boundFile is a Provider bound to one path for one apply: Status,
// ReadContent and Store of that path use the parent directory's handle d.
type boundFile struct {
	*Provider
	name string
	d    *safefs.Dir
	base string
}

// Status is Provider.Status through the held handle when name is the bound
// path.
func (b *boundFile) Status(ctx context.Context, name string) (*protocol.FileState, error) {
	if name != b.name {
		return b.Provider.Status(ctx, name)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return b.statusIn(ctx, name, b.d, b.base)
}

// Store is Provider.Store through the held handle when name is the bound
// path.
func (b *boundFile) Store(ctx context.Context, name string, contents []byte, source string, owner, group, mode string) error {
	if name != b.name {
		return b.Provider.Store(ctx, name, contents, source, owner, group, mode)
	}
	t, err := b.checkTarget(ctx, name, owner, group, mode)
	if err != nil {
		return err
	}
	return b.storeIn(ctx, b.d, b.base, contents, source, t)
}

// ReadContent is Provider.ReadContent through the held handle when name is
// the bound path.
func (b *boundFile) ReadContent(ctx context.Context, name string, limit int64) ([]byte, bool, error) {
	if name != b.name {
		return b.Provider.ReadContent(ctx, name, limit)
	}
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	return readContentIn(ctx, name, b.d, b.base, limit)
}
