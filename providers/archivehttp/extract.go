package archivehttp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"

	"github.com/ccm-fleet/ccm/resources/archivetype"
)

// ExtractParentMode is the mode of an extract_parent directory Extract creates.
const ExtractParentMode os.FileMode = 0o755

// Extract unpacks the archive at props.Name into props.ExtractParent. It
// reads and checks every entry first and refuses the whole archive, writing
// nothing, when one is unsafe (ErrUnsafeEntry) or a limit is exceeded
// (ErrExtractLimit). It then creates extract_parent (mode 0755) when missing
// and writes the entries through an os.Root confined to it. Existing files
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

	f, err := os.Open(props.Name)
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

	if err := os.MkdirAll(props.ExtractParent, ExtractParentMode); err != nil {
		return err
	}
	root, err := os.OpenRoot(props.ExtractParent)
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
		i++
		return w.write(e, body)
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
	p.log.Info("extracted archive", "name", props.Name, "extract_parent", props.ExtractParent, "entries", len(entries), "bytes", w.written)
	return nil
}

// writer creates checked entries beneath root.
type writer struct {
	root     *os.Root
	maxBytes int64
	written  int64
	dirs     []*entry // modes and times are set last, in reverse order
	links    []*entry // checked again once everything exists
}

// write creates one entry.
func (w *writer) write(e *entry, body io.Reader) error {
	if e.name == "" {
		return nil // extract_parent itself keeps its mode
	}
	if err := w.root.MkdirAll(path.Dir(e.name), 0o755); err != nil {
		return err
	}
	switch e.kind {
	case kindDir:
		if fi, err := w.root.Lstat(e.name); err == nil && !fi.IsDir() {
			if err := w.root.Remove(e.name); err != nil {
				return err
			}
		}
		if err := w.root.MkdirAll(e.name, 0o700); err != nil {
			return err
		}
		w.dirs = append(w.dirs, e)
		return nil
	case kindFile:
		if err := w.replace(e.name); err != nil {
			return err
		}
		return w.writeFile(e, body)
	case kindSymlink:
		if err := w.replace(e.name); err != nil {
			return err
		}
		w.links = append(w.links, e)
		return w.root.Symlink(e.link, e.name)
	case kindHardlink:
		if err := w.replace(e.name); err != nil {
			return err
		}
		return w.root.Link(e.link, e.name)
	}
	return fmt.Errorf("entry %q: unknown kind %v", e.name, e.kind)
}

// replace removes a file or symlink at name; a directory there is an error.
func (w *writer) replace(name string) error {
	fi, err := w.root.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return fmt.Errorf("entry %q: a directory exists at its path", name)
	}
	return w.root.Remove(name)
}

// writeFile creates a regular file with exactly e.size bytes from body.
func (w *writer) writeFile(e *entry, body io.Reader) error {
	if body == nil {
		return fmt.Errorf("entry %q: no content", e.name)
	}
	f, err := w.root.OpenFile(e.name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
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
		return w.root.Chtimes(e.name, e.mtime, e.mtime)
	}
	return nil
}

// finish checks every symlink created resolves inside root, even through
// symlinks that were on disk before, removing any that does not, then sets
// directory modes and times, in reverse archive order.
func (w *writer) finish() error {
	for _, e := range w.links {
		_, err := w.root.Stat(e.name)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			_ = w.root.Remove(e.name)
			return unsafe(e.name, "symlink to %q resolves outside the extraction directory: %v", e.link, err)
		}
	}
	for i := len(w.dirs) - 1; i >= 0; i-- {
		e := w.dirs[i]
		if err := w.root.Chmod(e.name, e.mode); err != nil {
			return err
		}
		if !e.mtime.IsZero() {
			if err := w.root.Chtimes(e.name, e.mtime, e.mtime); err != nil {
				return err
			}
		}
	}
	return nil
}
