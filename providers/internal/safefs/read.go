package safefs

import (
	"io/fs"
	"os"
	"path"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// OpenRead opens the file at the absolute path name for reading, reached
// by the walk of the package documentation for its directories and for
// name itself: a link at name is followed only when root or this
// process's user owns it (its target read from the link's own
// descriptor), and the file is finally opened with O_NOFOLLOW relative to
// the handle of its directory. What it returns is what the walk checked:
// no path is resolved again by the kernel, so a link swapped in after a
// check cannot redirect the read. A link another user owns is a
// *LinkError; more than MaxLinkHops links wrap ELOOP. The file is opened
// without blocking on a FIFO; the caller checks what it is.
func OpenRead(name string) (*os.File, error) {
	if !filepath.IsAbs(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: unix.EINVAL}
	}
	cur := filepath.Clean(name)
	euid := os.Geteuid()
	for hops := 0; ; hops++ {
		d, base, err := OpenParent(cur)
		if err != nil {
			return nil, err
		}
		fd, err := openPath(d.fd, base)
		if err != nil {
			_ = d.Close()
			return nil, d.pathErr("open", base, err)
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			_ = unix.Close(fd)
			_ = d.Close()
			return nil, d.pathErr("stat", base, err)
		}
		if st.Mode&unix.S_IFMT != unix.S_IFLNK {
			_ = unix.Close(fd)
			f, err := d.OpenFile(base, unix.O_RDONLY|unix.O_NONBLOCK, 0)
			_ = d.Close()
			return f, err
		}
		at := d.Join(base)
		switch {
		case hops >= MaxLinkHops:
			_ = unix.Close(fd)
			_ = d.Close()
			return nil, &fs.PathError{Op: "open", Path: name, Err: unix.ELOOP}
		case st.Uid != 0 && int(st.Uid) != euid:
			_ = unix.Close(fd)
			_ = d.Close()
			return nil, &LinkError{Path: name, Link: at, UID: int(st.Uid)}
		}
		target, err := readlinkFD(fd)
		_ = unix.Close(fd)
		dir := d.Path()
		_ = d.Close()
		if err != nil {
			return nil, &fs.PathError{Op: "readlink", Path: at, Err: err}
		}
		if !path.IsAbs(target) {
			target = path.Join(dir, target)
		}
		cur = path.Clean(target)
	}
}
