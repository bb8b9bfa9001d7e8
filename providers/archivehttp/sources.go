package archivehttp

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"strings"

	"github.com/ccm-fleet/ccm/resources/archivetype"
)

// maxZipLinkTarget bounds the stored target of a zip symlink (PATH_MAX).
const maxZipLinkTarget = 4096

// source reads the entries of one archive file; walk may be called more
// than once and reads the archive from its start each time.
type source interface {
	// walk calls fn for every entry in order. With data, r reads a regular
	// file's content; without, r is nil.
	walk(ctx context.Context, data bool, fn func(r *rawEntry, body io.Reader) error) error
}

// openSource opens the archive file f in format.
func openSource(f *os.File, format archivetype.Format) (source, error) {
	switch format {
	case archivetype.FormatTarGz:
		return &tarSource{f: f, gzip: true}, nil
	case archivetype.FormatTar:
		return &tarSource{f: f}, nil
	case archivetype.FormatZip:
		fi, err := f.Stat()
		if err != nil {
			return nil, err
		}
		zr, err := zip.NewReader(f, fi.Size())
		if err != nil && !errors.Is(err, zip.ErrInsecurePath) {
			return nil, fmt.Errorf("read zip: %w", err)
		}
		return &zipSource{zr: zr}, nil
	default:
		return nil, fmt.Errorf("%w: %s", archivetype.ErrUnsupportedFormat, format)
	}
}

// tarSource reads a tar archive, optionally gzip-compressed.
type tarSource struct {
	f    *os.File
	gzip bool
}

func (s *tarSource) walk(ctx context.Context, data bool, fn func(*rawEntry, io.Reader) error) error {
	if _, err := s.f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	var r io.Reader = bufio.NewReader(ctxReader{ctx: ctx, r: s.f})
	if s.gzip {
		zr, err := gzip.NewReader(r)
		if err != nil {
			return fmt.Errorf("read gzip: %w", err)
		}
		defer zr.Close()
		r = zr
	}
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		// ErrInsecurePath (GODEBUG tarinsecurepath=0) comes with a usable
		// header; our own checks judge the name.
		if err != nil && !errors.Is(err, tar.ErrInsecurePath) {
			return fmt.Errorf("read tar: %w", err)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if hdr.Typeflag == tar.TypeXGlobalHeader {
			continue // archive-wide PAX metadata (git archive writes one), not a member
		}
		raw := tarEntry(hdr)
		var body io.Reader
		if data && raw.kind == kindFile && raw.special == "" {
			body = tr
		}
		if err := fn(raw, body); err != nil {
			return err
		}
	}
}

// tarEntry maps a tar header to a raw entry.
func tarEntry(h *tar.Header) *rawEntry {
	r := &rawEntry{name: h.Name, link: h.Linkname, mode: fs.FileMode(h.Mode) & fs.ModePerm, size: h.Size, mtime: h.ModTime}
	switch h.Typeflag {
	case tar.TypeReg, '\x00', tar.TypeCont:
		r.kind = kindFile
	case tar.TypeDir:
		r.kind, r.size = kindDir, 0
	case tar.TypeSymlink:
		r.kind, r.size = kindSymlink, 0
	case tar.TypeLink:
		r.kind, r.size = kindHardlink, 0
	case tar.TypeChar:
		r.special = "character device"
	case tar.TypeBlock:
		r.special = "block device"
	case tar.TypeFifo:
		r.special = "fifo"
	case tar.TypeGNUSparse:
		r.special = "sparse file"
	default:
		r.special = fmt.Sprintf("tar type %q", h.Typeflag)
	}
	return r
}

// zipSource reads a zip archive.
type zipSource struct {
	zr *zip.Reader
}

func (s *zipSource) walk(ctx context.Context, data bool, fn func(*rawEntry, io.Reader) error) error {
	for _, zf := range s.zr.File {
		if err := ctx.Err(); err != nil {
			return err
		}
		raw, err := zipEntry(zf)
		if err != nil {
			return err
		}
		if !data || raw.kind != kindFile || raw.special != "" {
			if err := fn(raw, nil); err != nil {
				return err
			}
			continue
		}
		rc, err := zf.Open()
		if err != nil {
			return fmt.Errorf("read zip entry %q: %w", zf.Name, err)
		}
		err = fn(raw, ctxReader{ctx: ctx, r: rc})
		_ = rc.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// zipEntry maps a zip member to a raw entry; a symlink's target is its
// stored content.
func zipEntry(zf *zip.File) (*rawEntry, error) {
	mode := zf.Mode()
	r := &rawEntry{name: zf.Name, mode: mode & fs.ModePerm, mtime: zf.Modified}
	switch {
	case mode&fs.ModeSymlink != 0:
		r.kind = kindSymlink
		target, err := readZipLink(zf)
		if err != nil {
			return nil, err
		}
		r.link = target
	case mode.IsDir() || strings.HasSuffix(zf.Name, "/"):
		r.kind = kindDir
	case mode&fs.ModeDevice != 0 && mode&fs.ModeCharDevice != 0:
		r.special = "character device"
	case mode&fs.ModeDevice != 0:
		r.special = "block device"
	case mode&fs.ModeNamedPipe != 0:
		r.special = "fifo"
	case mode&fs.ModeSocket != 0:
		r.special = "socket"
	case !mode.IsRegular():
		r.special = "irregular file"
	default:
		r.kind = kindFile
		if zf.UncompressedSize64 > math.MaxInt64 {
			return nil, fmt.Errorf("%w: entry %q is too large", ErrExtractLimit, zf.Name)
		}
		r.size = int64(zf.UncompressedSize64)
	}
	if r.mode == 0 && r.special == "" {
		r.mode = 0o644
		if r.kind == kindDir {
			r.mode = 0o755
		}
	}
	return r, nil
}

// readZipLink reads a zip symlink's target, bounded.
func readZipLink(zf *zip.File) (string, error) {
	rc, err := zf.Open()
	if err != nil {
		return "", fmt.Errorf("read zip entry %q: %w", zf.Name, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, maxZipLinkTarget+1))
	if err != nil {
		return "", fmt.Errorf("read zip entry %q: %w", zf.Name, err)
	}
	if len(b) > maxZipLinkTarget {
		return "", unsafe(zf.Name, "symlink target longer than %d bytes", maxZipLinkTarget)
	}
	return string(b), nil
}
