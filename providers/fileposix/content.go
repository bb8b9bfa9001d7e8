package fileposix

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/ccm-fleet/ccm/providers/internal/safefs"

	"github.com/ccm-fleet/ccm/resources/filetype"
)

var (
	_ filetype.ContentReader = (*Provider)(nil)
	_ filetype.SourceOpener  = (*Provider)(nil)
)

// ReadContent returns up to limit bytes of the regular file name, read
// through its parent's handle with O_NOFOLLOW like Status, and whether the
// file holds more than limit bytes. A missing file reads as empty; a link
// or anything but a regular file is an error.
func (p *Provider) ReadContent(ctx context.Context, name string, limit int64) ([]byte, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	if d, base, ok := p.held(ctx, name); ok {
		return readContentIn(ctx, name, d, base, limit)
	}
	d, base, err := p.parentOf(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read content: %w", err)
	}
	defer d.Close()
	return readContentIn(ctx, name, d, base, limit)
}

// readContentIn is ReadContent of base in the parent directory's handle d.
func readContentIn(ctx context.Context, name string, d *safefs.Dir, base string, limit int64) ([]byte, bool, error) {
	f, err := d.Open(base)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read content: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, false, fmt.Errorf("read content: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, false, fmt.Errorf("read content: %s %w", name, filetype.ErrUnsupportedFileType)
	}
	b, err := io.ReadAll(io.LimitReader(filetype.ContextReader(ctx, f), limit+1))
	if err != nil {
		return nil, false, fmt.Errorf("read content: %w", err)
	}
	if int64(len(b)) > limit {
		return b[:limit], true, nil
	}
	return b, false, nil
}
