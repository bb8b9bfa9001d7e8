package safefs

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Dir is a handle on a directory (a path-only descriptor). Its methods take
// one name relative to it and never follow a symbolic link in that name.
// Close it when done. A Dir is safe for concurrent use.
type Dir struct {
	fd   int
	path string
}

// Path returns the path the directory was reached by, for messages.
func (d *Dir) Path() string { return d.path }

// Join returns the path of name in d, for messages.
func (d *Dir) Join(name string) string { return path.Join(d.path, name) }

// Close releases the handle.
func (d *Dir) Close() error { return unix.Close(d.fd) }

func (d *Dir) pathErr(op, name string, err error) error {
	return &fs.PathError{Op: op, Path: d.Join(name), Err: err}
}

// linkErr is the error for a link found at name where none may be.
func (d *Dir) linkErr(name string) error {
	p := d.Join(name)
	return &LinkError{Path: p, Link: p, UID: -1}
}

// Lstat describes what is at name without following a link there.
func (d *Dir) Lstat(name string) (fs.FileInfo, error) {
	if err := checkName("lstat", d.path, name); err != nil {
		return nil, err
	}
	fd, err := openPath(d.fd, name)
	if err != nil {
		return nil, d.pathErr("lstat", name, err)
	}
	f := os.NewFile(uintptr(fd), d.Join(name))
	defer f.Close()
	return f.Stat()
}

// OpenFile opens name with flag (O_NOFOLLOW and O_CLOEXEC are always
// added) and perm for a created file. A link at name is a *LinkError.
func (d *Dir) OpenFile(name string, flag int, perm fs.FileMode) (*os.File, error) {
	if err := checkName("open", d.path, name); err != nil {
		return nil, err
	}
	for {
		fd, err := unix.Openat(d.fd, name, flag|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm.Perm()))
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.ELOOP):
			return nil, d.linkErr(name)
		case err != nil:
			return nil, d.pathErr("open", name, err)
		}
		return os.NewFile(uintptr(fd), d.Join(name)), nil
	}
}

// Open opens name read-only, without blocking on a FIFO.
func (d *Dir) Open(name string) (*os.File, error) {
	return d.OpenFile(name, unix.O_RDONLY|unix.O_NONBLOCK, 0)
}

// maxTempTries bounds the names CreateTemp tries.
const maxTempTries = 100

// CreateTemp creates a new file prefix+random in d, mode 0600, with
// O_CREAT|O_EXCL|O_NOFOLLOW, and returns it with its name (relative to d).
func (d *Dir) CreateTemp(prefix string) (*os.File, string, error) {
	var b [4]byte
	for range maxTempTries {
		if _, err := rand.Read(b[:]); err != nil {
			return nil, "", err
		}
		name := prefix + strconv.FormatUint(uint64(binary.LittleEndian.Uint32(b[:])), 10)
		f, err := d.OpenFile(name, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return f, name, err
	}
	return nil, "", d.pathErr("createtemp", prefix+"*", fs.ErrExist)
}

// Rename renames oldname to newname, both in d (renameat).
func (d *Dir) Rename(oldname, newname string) error {
	if err := checkName("rename", d.path, oldname); err != nil {
		return err
	}
	if err := checkName("rename", d.path, newname); err != nil {
		return err
	}
	if err := unix.Renameat(d.fd, oldname, d.fd, newname); err != nil {
		return &os.LinkError{Op: "rename", Old: d.Join(oldname), New: d.Join(newname), Err: err}
	}
	return nil
}

// Remove removes the file, link or empty directory name (unlinkat).
func (d *Dir) Remove(name string) error {
	if err := checkName("remove", d.path, name); err != nil {
		return err
	}
	err := unix.Unlinkat(d.fd, name, 0)
	if errors.Is(err, unix.EISDIR) {
		err = unix.Unlinkat(d.fd, name, unix.AT_REMOVEDIR)
	}
	if err != nil {
		return d.pathErr("remove", name, err)
	}
	return nil
}

// RemoveAll removes name and, when it is a directory, everything below it,
// descending through handles and never following a link. A missing name is
// not an error.
func (d *Dir) RemoveAll(name string) error {
	if err := checkName("removeall", d.path, name); err != nil {
		return err
	}
	err := d.Remove(name)
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if !errors.Is(err, unix.ENOTEMPTY) && !errors.Is(err, unix.EEXIST) {
		return err
	}
	sub, err := d.OpenDir(name)
	if err != nil {
		return err
	}
	names, err := sub.ReadDirNames()
	if err == nil {
		for _, n := range names {
			if rerr := sub.RemoveAll(n); rerr != nil {
				err = rerr
				break
			}
		}
	}
	_ = sub.Close()
	if err != nil {
		return err
	}
	if err := d.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// Mkdir creates the directory name with perm (less the umask).
func (d *Dir) Mkdir(name string, perm fs.FileMode) error {
	if err := checkName("mkdir", d.path, name); err != nil {
		return err
	}
	if err := unix.Mkdirat(d.fd, name, uint32(perm.Perm())); err != nil {
		return d.pathErr("mkdir", name, err)
	}
	return nil
}

// OpenDir returns a handle on the directory name in d; a link there is a
// *LinkError, anything else but a directory wraps syscall.ENOTDIR.
func (d *Dir) OpenDir(name string) (*Dir, error) {
	if err := checkName("open", d.path, name); err != nil {
		return nil, err
	}
	fd, err := openPath(d.fd, name)
	if err != nil {
		return nil, d.pathErr("open", name, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		_ = unix.Close(fd)
		return nil, d.pathErr("stat", name, err)
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return &Dir{fd: fd, path: d.Join(name)}, nil
	case unix.S_IFLNK:
		_ = unix.Close(fd)
		return nil, d.linkErr(name)
	}
	_ = unix.Close(fd)
	return nil, d.pathErr("open", name, unix.ENOTDIR)
}

// Sub returns a handle on rel, a slash-separated path below d whose every
// component must be a directory (never a link: *LinkError). With create,
// missing components are made with perm.
func (d *Dir) Sub(rel string, create bool, perm fs.FileMode) (*Dir, error) {
	cur := &Dir{fd: -1, path: d.path}
	fd, err := unix.Openat(d.fd, ".", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, d.pathErr("open", ".", err)
	}
	cur.fd = fd
	for part := range strings.SplitSeq(rel, "/") {
		if part == "" || part == "." {
			continue
		}
		if part == ".." {
			_ = cur.Close()
			return nil, d.pathErr("open", rel, fmt.Errorf("%q leaves the directory: %w", rel, unix.EXDEV))
		}
		next, err := cur.OpenDir(part)
		if create && errors.Is(err, fs.ErrNotExist) {
			if err = cur.Mkdir(part, perm); err == nil || errors.Is(err, fs.ErrExist) {
				next, err = cur.OpenDir(part)
			}
		}
		_ = cur.Close()
		if err != nil {
			return nil, err
		}
		cur = next
	}
	return cur, nil
}

// ReadDirNames returns the names in d, unsorted.
func (d *Dir) ReadDirNames() ([]string, error) {
	f, err := d.reopen()
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return names, nil
}

// Sync flushes the directory (after a rename in it).
func (d *Dir) Sync() error {
	f, err := d.reopen()
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// OpenSelf opens the directory itself for reading, to fchown or fchmod it.
func (d *Dir) OpenSelf() (*os.File, error) { return d.reopen() }

// reopen opens d itself for reading (a path-only descriptor cannot be read,
// synced or chmodded).
func (d *Dir) reopen() (*os.File, error) {
	fd, err := unix.Openat(d.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, d.pathErr("open", ".", err)
	}
	return os.NewFile(uintptr(fd), d.path), nil
}

// Symlink creates the link name -> target.
func (d *Dir) Symlink(target, name string) error {
	if err := checkName("symlink", d.path, name); err != nil {
		return err
	}
	if err := unix.Symlinkat(target, d.fd, name); err != nil {
		return &os.LinkError{Op: "symlink", Old: target, New: d.Join(name), Err: err}
	}
	return nil
}

// Link creates newname in d as a hard link to oldname in old, never
// following a link at oldname.
func (d *Dir) Link(old *Dir, oldname, newname string) error {
	if err := checkName("link", old.path, oldname); err != nil {
		return err
	}
	if err := checkName("link", d.path, newname); err != nil {
		return err
	}
	if err := unix.Linkat(old.fd, oldname, d.fd, newname, 0); err != nil {
		return &os.LinkError{Op: "link", Old: old.Join(oldname), New: d.Join(newname), Err: err}
	}
	return nil
}

// Readlink returns the target of the link name.
func (d *Dir) Readlink(name string) (string, error) {
	if err := checkName("readlink", d.path, name); err != nil {
		return "", err
	}
	buf := make([]byte, maxLinkTarget+1)
	n, err := unix.Readlinkat(d.fd, name, buf)
	if err != nil {
		return "", d.pathErr("readlink", name, err)
	}
	if n > maxLinkTarget {
		return "", d.pathErr("readlink", name, unix.ENAMETOOLONG)
	}
	return string(buf[:n]), nil
}

// Chtimes sets the access and modification times of name, not following a
// link there.
func (d *Dir) Chtimes(name string, atime, mtime time.Time) error {
	if err := checkName("chtimes", d.path, name); err != nil {
		return err
	}
	ts := []unix.Timespec{unix.NsecToTimespec(atime.UnixNano()), unix.NsecToTimespec(mtime.UnixNano())}
	if err := unix.UtimesNanoAt(d.fd, name, ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return d.pathErr("chtimes", name, err)
	}
	return nil
}

// ResolvesBeneath reports whether name, followed through any links with
// the kernel's RESOLVE_BENEATH (openat2), stays below d. A dangling link
// that stays below is fine.
func (d *Dir) ResolvesBeneath(name string) error {
	how := &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS}
	fd, err := unix.Openat2(d.fd, name, how)
	switch {
	case err == nil:
		_ = unix.Close(fd)
		return nil
	case errors.Is(err, unix.ENOENT):
		return nil
	}
	return d.pathErr("resolve", name, err)
}

// RemoveDir removes the empty directory name (unlinkat with AT_REMOVEDIR);
// it never removes anything but a directory.
func (d *Dir) RemoveDir(name string) error {
	if err := checkName("rmdir", d.path, name); err != nil {
		return err
	}
	if err := unix.Unlinkat(d.fd, name, unix.AT_REMOVEDIR); err != nil {
		return d.pathErr("rmdir", name, err)
	}
	return nil
}
