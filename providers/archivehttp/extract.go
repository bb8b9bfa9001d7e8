package archivehttp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"

	"github.com/ccm-fleet/ccm/providers/internal/safefs"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/archivetype"
)

// ExtractParentMode is the mode of an extract_parent directory Extract creates.
const ExtractParentMode os.FileMode = 0o755

// Extract unpacks the archive at props.Name into props.ExtractParent. It
// reads and checks every entry first and refuses the whole archive, writing
// nothing, when one is unsafe (ErrUnsafeEntry) or a limit is exceeded
// (ErrExtractLimit). It then creates extract_parent (mode 0755) when missing
// and writes the entries through handles opened from it (see writer). Existing files
// and symlinks at an entry's path are replaced; directories are kept and
// take the archive's mode. Without a deadline on ctx the provider's timeout
// applies.
func (p *Provider) Extract(ctx context.Context, props *archivetype.Properties) error {
	if props.ExtractParent == "" {
		return ErrNoExtractParent
	}
	format, ok := archivetype.FormatOf(props.Name)
	if !ok {
		return fmt.Errorf("%s: %w", props.Name, archivetype.ErrUnsupportedFormat)
	}
	ctx, cancel := p.cfg.withTimeout(ctx)
	defer cancel()

	f, err := openArchive(props.Name)
	if err != nil {
		return err
	}
	defer f.Close()
	src, err := openSource(f, format)
	if err != nil {
		return fmt.Errorf("%s: %w", props.Name, err)
	}

	chk := newChecker(p.cfg.maxEntries, p.cfg.maxExtract)
	err = src.walk(ctx, false, func(r *rawEntry, _ io.Reader) error { return chk.add(r) })
	if err != nil {
		return fmt.Errorf("%s: %w", props.Name, err)
	}
	entries, err := chk.finish()
	if err != nil {
		return fmt.Errorf("%s: %w", props.Name, err)
	}

	root, err := safefs.MkdirAll(props.ExtractParent, ExtractParentMode)
	if err != nil {
		return err
	}
	defer root.Close()

	w := &writer{root: root, maxBytes: p.cfg.maxExtract}
	i := 0
	err = src.walk(ctx, true, func(r *rawEntry, body io.Reader) error {
		e, err := normalise(r)
		if err != nil {
			return err
		}
		if i >= len(entries) || !sameEntry(e, entries[i]) {
			return fmt.Errorf("%w: entry %d (%q)", ErrArchiveChanged, i, r.name)
		}
		checked := entries[i]
		i++
		return w.write(checked, body)
	})
	if err == nil && i != len(entries) {
		err = fmt.Errorf("%w: %d entries, expected %d", ErrArchiveChanged, i, len(entries))
	}
	if err == nil {
		err = w.finish()
	}
	if err != nil {
		return fmt.Errorf("%s: extract into %s: %w", props.Name, props.ExtractParent, err)
	}
	resources.Logger(ctx, p.log).Info("extracted archive", "name", props.Name, "extract_parent", props.ExtractParent, "entries", len(entries), "bytes", w.written)
	return nil
}

// writer creates checked entries beneath root, a handle on extract_parent.
// Each entry's directory is opened from root one component at a time with
// O_NOFOLLOW (safefs.Dir.Sub; the archive's own symlinks were resolved by
// the checker into entry.at), and the entry is created relative to that
// handle: a directory swapped for a link mid-extraction is refused with
// filetype.ErrSymlink, never followed.
type writer struct {
	root     *safefs.Dir
	maxBytes int64
	written  int64
	dirs     []*entry // modes and times are set last, in reverse order
	links    []*entry // checked again once everything exists
}

// parent opens the directory of the slash-separated rel below root,
// creating missing components, and returns it with rel's last component.
func (w *writer) parent(rel string, create bool) (*safefs.Dir, string, error) {
	d, err := w.root.Sub(path.Dir(rel), create, 0o755)
	if err != nil {
		return nil, "", err
	}
	return d, path.Base(rel), nil
}

// write creates one entry.
func (w *writer) write(e *entry, body io.Reader) error {
	if e.name == "" {
		return nil // extract_parent itself keeps its mode
	}
	d, base, err := w.parent(e.at, true)
	if err != nil {
		return err
	}
	defer d.Close()
	switch e.kind {
	case kindDir:
		if fi, err := d.Lstat(base); err == nil && !fi.IsDir() {
			if err := d.Remove(base); err != nil {
				return err
			}
		}
		if err := d.Mkdir(base, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		w.dirs = append(w.dirs, e)
		return nil
	case kindFile:
		if err := replace(d, base); err != nil {
			return err
		}
		return w.writeFile(d, base, e, body)
	case kindSymlink:
		if err := replace(d, base); err != nil {
			return err
		}
		w.links = append(w.links, e)
		return d.Symlink(e.link, base)
	case kindHardlink:
		if err := replace(d, base); err != nil {
			return err
		}
		src, srcBase, err := w.parent(e.linkAt, false)
		if err != nil {
			return err
		}
		defer src.Close()
		return d.Link(src, srcBase, base)
	}
	return fmt.Errorf("entry %q: unknown kind %v", e.name, e.kind)
}

// replace removes a file or symlink at base in d; a directory there is an
// error.
func replace(d *safefs.Dir, base string) error {
	fi, err := d.Lstat(base)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return fmt.Errorf("entry %q: a directory exists at its path", d.Join(base))
	}
	return d.Remove(base)
}

// writeFile creates the regular file base in d (O_CREAT|O_EXCL|O_NOFOLLOW)
// with exactly e.size bytes from body.
func (w *writer) writeFile(d *safefs.Dir, base string, e *entry, body io.Reader) error {
	if body == nil {
		return fmt.Errorf("entry %q: no content", e.name)
	}
	f, err := d.OpenFile(base, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	n, err := io.Copy(f, io.LimitReader(body, e.size+1))
	if err == nil && n != e.size {
		err = fmt.Errorf("%w: entry %q has %d bytes, its header says %d", ErrArchiveChanged, e.name, n, e.size)
	}
	w.written += n
	if err == nil && w.written > w.maxBytes {
		err = fmt.Errorf("%w: more than %d bytes of content", ErrExtractLimit, w.maxBytes)
	}
	if err == nil {
		err = f.Chmod(e.mode)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("entry %q: %w", e.name, err)
	}
	if !e.mtime.IsZero() {
		return d.Chtimes(base, e.mtime, e.mtime)
	}
	return nil
}

// finish checks every symlink created resolves inside root (the kernel
// resolves it with RESOLVE_BENEATH), even through symlinks that were on
// disk before, removing any that does not, then sets directory modes and
// times through handles, in reverse archive order.
func (w *writer) finish() error {
	for _, e := range w.links {
		if err := w.root.ResolvesBeneath(e.at); err != nil {
			if d, base, perr := w.parent(e.at, false); perr == nil {
				_ = d.Remove(base)
				_ = d.Close()
			}
			return unsafe(e.name, "symlink to %q resolves outside the extraction directory: %v", e.link, err)
		}
	}
	for i := len(w.dirs) - 1; i >= 0; i-- {
		if err := w.setDir(w.dirs[i]); err != nil {
			return err
		}
	}
	return nil
}

// setDir sets a directory entry's mode and time through a handle on it.
func (w *writer) setDir(e *entry) error {
	d, err := w.root.Sub(e.at, false, 0)
	if err != nil {
		return err
	}
	defer d.Close()
	f, err := d.OpenSelf()
	if err != nil {
		return err
	}
	err = f.Chmod(e.mode)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil || e.mtime.IsZero() {
		return err
	}
	parent, base, err := w.parent(e.at, false)
	if err != nil {
		return err
	}
	defer parent.Close()
	return parent.Chtimes(base, e.mtime, e.mtime)
}
