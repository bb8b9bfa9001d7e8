package sources

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// Bundle limits.
const (
	// MaxBundleBytes bounds a bundle archive as stored or served
	// (compressed).
	MaxBundleBytes = 16 << 20
	// MaxUnpackedBytes bounds the total size of a bundle's files once
	// unpacked.
	MaxUnpackedBytes = 64 << 20
	// MaxEntries bounds the entries (files and directories) of a bundle.
	MaxEntries = 4096
	// ManifestFile is the manifest's name at the root of a bundle.
	ManifestFile = "manifest.yaml"
)

// Pack makes a bundle of the directory dir: every regular file and
// directory below it, with paths relative to dir, in a stable order and
// with fixed times and owners, so the same tree always packs to the same
// bytes. dir must hold manifest.yaml; symlinks and special files are
// refused, as are trees over the bundle limits. Errors wrap ErrBundle.
func Pack(dir string) ([]byte, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBundle, err)
	}
	defer root.Close()
	if fi, err := root.Lstat(ManifestFile); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s has no regular %s", ErrBundle, dir, ManifestFile)
	}
	var names []string
	err = fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == "." {
			return nil
		}
		if t := d.Type(); !t.IsDir() && !t.IsRegular() {
			return fmt.Errorf("%s: only regular files and directories are bundled", p)
		}
		names = append(names, p)
		if len(names) > MaxEntries {
			return fmt.Errorf("more than %d entries", MaxEntries)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrBundle, dir, err)
	}
	slices.Sort(names)
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	total := int64(0)
	for _, p := range names {
		fi, err := root.Lstat(p)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrBundle, p, err)
		}
		hdr := &tar.Header{Name: p, Mode: 0o644, Format: tar.FormatPAX}
		if fi.IsDir() {
			hdr.Typeflag, hdr.Name, hdr.Mode = tar.TypeDir, p+"/", 0o755
			if err := tw.WriteHeader(hdr); err != nil {
				return nil, fmt.Errorf("%w: %w", ErrBundle, err)
			}
			continue
		}
		body, err := root.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrBundle, p, err)
		}
		if total += int64(len(body)); total > MaxUnpackedBytes {
			return nil, fmt.Errorf("%w: the files exceed %d bytes", ErrBundle, MaxUnpackedBytes)
		}
		hdr.Typeflag, hdr.Size = tar.TypeReg, int64(len(body))
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrBundle, err)
		}
		if _, err := tw.Write(body); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrBundle, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBundle, err)
	}
	if err := gz.Close(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBundle, err)
	}
	if buf.Len() > MaxBundleBytes {
		return nil, fmt.Errorf("%w: %d bytes compressed, the limit is %d", ErrBundle, buf.Len(), MaxBundleBytes)
	}
	return buf.Bytes(), nil
}

// Unpack writes the bundle archive data into dir, which must not exist
// (it is made 0700), through an os.Root so nothing lands outside it. Only
// regular files and directories are taken, with clean local paths; links,
// devices, absolute paths and ".." are refused, as are archives over the
// bundle limits and those without manifest.yaml at the root. Files are
// written 0600. On error dir is removed. Errors wrap ErrBundle.
func Unpack(data []byte, dir string) (err error) {
	if len(data) > MaxBundleBytes {
		return fmt.Errorf("%w: %d bytes, the limit is %d", ErrBundle, len(data), MaxBundleBytes)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return fmt.Errorf("%w: %w", ErrBundle, err)
	}
	defer func() {
		if err != nil {
			_ = os.RemoveAll(dir)
		}
	}()
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrBundle, err)
	}
	defer root.Close()
	gz, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("%w: not gzip compressed: %w", ErrBundle, err)
	}
	// Headers, padding and skipped bodies count too: a small archive must
	// not decompress without end.
	tr := tar.NewReader(io.LimitReader(gz, MaxUnpackedBytes+MaxEntries*4096))
	var total int64
	entries := 0
	seen := map[string]bool{}
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("%w: not a tar archive: %w", ErrBundle, err)
		}
		if entries++; entries > MaxEntries {
			return fmt.Errorf("%w: more than %d entries", ErrBundle, MaxEntries)
		}
		name := strings.TrimSuffix(strings.TrimPrefix(hdr.Name, "./"), "/")
		if name == "" || name == "." {
			continue
		}
		if strings.Contains(name, `\`) || !filepath.IsLocal(name) || path.Clean(name) != name {
			return fmt.Errorf("%w: entry %.100q is not a clean path inside the bundle", ErrBundle, hdr.Name)
		}
		if seen[name] {
			return fmt.Errorf("%w: entry %.100q appears twice", ErrBundle, name)
		}
		seen[name] = true
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := root.MkdirAll(name, 0o700); err != nil {
				return fmt.Errorf("%w: %s: %w", ErrBundle, name, err)
			}
		case tar.TypeReg:
			if hdr.Size < 0 || total+hdr.Size > MaxUnpackedBytes {
				return fmt.Errorf("%w: the files exceed %d bytes", ErrBundle, MaxUnpackedBytes)
			}
			if d := path.Dir(name); d != "." {
				if err := root.MkdirAll(d, 0o700); err != nil {
					return fmt.Errorf("%w: %s: %w", ErrBundle, name, err)
				}
			}
			f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
			if err != nil {
				return fmt.Errorf("%w: %s: %w", ErrBundle, name, err)
			}
			n, err := io.Copy(f, io.LimitReader(tr, hdr.Size+1))
			cerr := f.Close()
			if err == nil {
				err = cerr
			}
			if err == nil && n != hdr.Size {
				err = fmt.Errorf("%d bytes, the header says %d", n, hdr.Size)
			}
			if err != nil {
				return fmt.Errorf("%w: %s: %w", ErrBundle, name, err)
			}
			total += n
		default:
			return fmt.Errorf("%w: entry %.100q: only regular files and directories are taken", ErrBundle, name)
		}
	}
	if fi, err := root.Lstat(ManifestFile); err != nil || !fi.Mode().IsRegular() {
		return fmt.Errorf("%w: no %s at the bundle's root", ErrBundle, ManifestFile)
	}
	return nil
}
