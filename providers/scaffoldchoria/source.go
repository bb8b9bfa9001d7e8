package scaffoldchoria

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/ccm-fleet/ccm/providers/internal/safefs"
)

// Bounds of the copy of a scaffold source.
const (
	// MaxSourceEntries bounds the files and directories of a source.
	MaxSourceEntries = 10000
	// MaxSourceBytes bounds the bytes of a source's files together.
	MaxSourceBytes = 64 << 20
	// maxSourceDepth bounds how deep a source's directories nest.
	maxSourceDepth = 64
)

// copySource copies the directory source into dst (created, mode 0700)
// through directory handles, and the library renders that private copy,
// never the source by path: the source is reached by the walk of package
// safefs (links only root or this process's user own are followed), and
// below it only directories and regular files are read, each opened with
// O_NOFOLLOW relative to its directory's handle. A link below the source
// is refused, so what a scope judged is what is rendered, however the
// source changes after the check.
func copySource(source, dst string) error {
	src, err := safefs.Open(source)
	if err != nil {
		return fmt.Errorf("cannot read source directory %s: %w", source, err)
	}
	defer src.Close()
	if err := os.Mkdir(dst, 0o700); err != nil {
		return err
	}
	out, err := safefs.Open(dst)
	if err != nil {
		return err
	}
	defer out.Close()
	c := &sourceCopy{}
	return c.tree(src, out, 0)
}

// sourceCopy counts what one copy has taken.
type sourceCopy struct {
	entries int
	bytes   int64
}

func (c *sourceCopy) tree(src, dst *safefs.Dir, depth int) error {
	if depth > maxSourceDepth {
		return fmt.Errorf("%w %s: directories nest deeper than %d", ErrSourceTree, src.Path(), maxSourceDepth)
	}
	names, err := src.ReadDirNames()
	if err != nil {
		return err
	}
	slices.Sort(names)
	for _, name := range names {
		if c.entries++; c.entries > MaxSourceEntries {
			return fmt.Errorf("%w: more than %d files and directories", ErrSourceTree, MaxSourceEntries)
		}
		fi, err := src.Lstat(name)
		if err != nil {
			return err
		}
		switch {
		case fi.IsDir():
			if err := c.dir(src, dst, name, depth); err != nil {
				return err
			}
		case fi.Mode().IsRegular():
			if err := c.file(src, dst, name); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%w %s: only directories and regular files are read from a source (%s)", ErrSourceTree, src.Join(name), fi.Mode().Type())
		}
	}
	return nil
}

func (c *sourceCopy) dir(src, dst *safefs.Dir, name string, depth int) error {
	sub, err := src.OpenDir(name)
	if err != nil {
		return err
	}
	defer sub.Close()
	if err := dst.Mkdir(name, 0o700); err != nil {
		return err
	}
	out, err := dst.OpenDir(name)
	if err != nil {
		return err
	}
	defer out.Close()
	return c.tree(sub, out, depth+1)
}

func (c *sourceCopy) file(src, dst *safefs.Dir, name string) error {
	in, err := src.Open(name)
	if err != nil {
		return err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%w %s: not a regular file", ErrSourceTree, src.Join(name))
	}
	out, err := dst.OpenFile(name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	left := MaxSourceBytes - c.bytes
	n, err := io.Copy(out, io.LimitReader(in, left+1))
	c.bytes += n
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if n > left {
		return fmt.Errorf("%w: its files hold more than %d bytes", ErrSourceTree, MaxSourceBytes)
	}
	return nil
}

// privateSource is where the copy of the source goes in the private
// directory of one render.
func privateSource(private string) string { return filepath.Join(private, "source") }
