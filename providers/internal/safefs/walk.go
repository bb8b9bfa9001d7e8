package safefs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/ccm-fleet/ccm/internal/nolinks"
)

// MaxLinkHops bounds how many symbolic links one walk follows (the kernel's
// own limit is 40).
const MaxLinkHops = 40

// maxLinkTarget bounds a link target read during a walk (PATH_MAX).
const maxLinkTarget = 4096

// Open returns a handle on the existing directory dir, an absolute path,
// reached by the walk described in the package documentation. A missing
// component is an error wrapping fs.ErrNotExist, a component that is not a
// directory or a trusted link one wrapping syscall.ENOTDIR, a link another
// user owns a *LinkError.
func Open(dir string) (*Dir, error) {
	return walk(dir, false, 0)
}

// MkdirAll is Open, creating each missing component with mode perm (less
// the umask) on the way, as os.MkdirAll does.
func MkdirAll(dir string, perm fs.FileMode) (*Dir, error) {
	return walk(dir, true, perm)
}

// OpenParent opens the directory holding name and returns it with name's
// last component, which is never "", "." or "..".
func OpenParent(name string) (*Dir, string, error) {
	clean := filepath.Clean(name)
	base := filepath.Base(clean)
	if base == "/" || base == "." || base == ".." {
		return nil, "", &fs.PathError{Op: "open", Path: name, Err: unix.EINVAL}
	}
	d, err := Open(filepath.Dir(clean))
	if err != nil {
		return nil, "", err
	}
	return d, base, nil
}

// OpenExisting opens the directory holding name and looks at name in it
// without following a link (see Dir.Lstat). When name or a directory on
// the way does not exist it returns a nil Dir and no error: there is
// nothing to act on. Otherwise the caller closes the Dir.
func OpenExisting(name string) (*Dir, string, fs.FileInfo, error) {
	d, base, err := OpenParent(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "", nil, nil
	}
	if err != nil {
		return nil, "", nil, err
	}
	fi, err := d.Lstat(base)
	if err != nil {
		_ = d.Close()
		if errors.Is(err, fs.ErrNotExist) {
			return nil, "", nil, nil
		}
		return nil, "", nil, err
	}
	return d, base, fi, nil
}

// frame is one directory of a walk: its descriptor and the path it was
// reached by.
type frame struct {
	fd   int
	path string
}

func walk(dir string, create bool, perm fs.FileMode) (*Dir, error) {
	if !filepath.IsAbs(dir) {
		return nil, &fs.PathError{Op: "open", Path: dir, Err: errors.New("not an absolute path")}
	}
	dir = filepath.Clean(dir)
	if fd, ok := openFast(dir); ok {
		return &Dir{fd: fd, path: dir}, nil
	}
	rootFD, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: "/", Err: err}
	}
	stack := []frame{{fd: rootFD, path: "/"}}
	defer func() {
		for _, f := range stack {
			_ = unix.Close(f.fd)
		}
	}()
	pending := split(dir)
	hops := 0
	euid := os.Geteuid()
	for len(pending) > 0 {
		part := pending[0]
		pending = pending[1:]
		switch part {
		case "", ".":
			continue
		case "..":
			if len(stack) > 1 {
				_ = unix.Close(stack[len(stack)-1].fd)
				stack = stack[:len(stack)-1]
			}
			continue
		}
		cur := stack[len(stack)-1]
		at := path.Join(cur.path, part)
		fd, err := openPath(cur.fd, part)
		if errors.Is(err, unix.ENOENT) && create {
			if err = unix.Mkdirat(cur.fd, part, uint32(perm.Perm())); err == nil || errors.Is(err, unix.EEXIST) {
				fd, err = openPath(cur.fd, part)
			}
		}
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: at, Err: err}
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			_ = unix.Close(fd)
			return nil, &fs.PathError{Op: "stat", Path: at, Err: err}
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			stack = append(stack, frame{fd: fd, path: at})
			continue
		case unix.S_IFLNK:
		default:
			_ = unix.Close(fd)
			return nil, &fs.PathError{Op: "open", Path: at, Err: unix.ENOTDIR}
		}
		if hops++; hops > MaxLinkHops {
			_ = unix.Close(fd)
			return nil, &fs.PathError{Op: "open", Path: dir, Err: unix.ELOOP}
		}
		if st.Uid != 0 && int(st.Uid) != euid {
			_ = unix.Close(fd)
			return nil, &LinkError{Path: dir, Link: at, UID: int(st.Uid)}
		}
		target, err := readlinkFD(fd)
		_ = unix.Close(fd)
		if err != nil {
			return nil, &fs.PathError{Op: "readlink", Path: at, Err: err}
		}
		if strings.HasPrefix(target, "/") {
			for _, f := range stack[1:] {
				_ = unix.Close(f.fd)
			}
			stack = stack[:1]
		}
		pending = append(split(target), pending...)
	}
	top := stack[len(stack)-1]
	stack = stack[:len(stack)-1]
	return &Dir{fd: top.fd, path: top.path}, nil
}

// openFast opens a path with no link on the way in one call (see package
// nolinks); specs and benchmarks replace it to compare with the walk alone.
var openFast = nolinks.OpenDir

// openPath opens name in dirfd as a path-only descriptor, not following a
// link there (the descriptor is then the link's own).
func openPath(dirfd int, name string) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if !errors.Is(err, unix.EINTR) {
			return fd, err
		}
	}
}

// readlinkFD reads the target of the link fd refers to (opened O_PATH).
func readlinkFD(fd int) (string, error) {
	buf := make([]byte, maxLinkTarget+1)
	n, err := unix.Readlinkat(fd, "", buf)
	if err != nil {
		return "", err
	}
	if n > maxLinkTarget {
		return "", unix.ENAMETOOLONG
	}
	return string(buf[:n]), nil
}

func split(p string) []string {
	return strings.Split(strings.Trim(p, "/"), "/")
}

// checkName refuses a name that is not one path component.
func checkName(op, dir, name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsRune(name, '/') {
		return &fs.PathError{Op: op, Path: path.Join(dir, name), Err: fmt.Errorf("%q is not a single name: %w", name, unix.EINVAL)}
	}
	return nil
}
