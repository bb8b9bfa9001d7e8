package nolinks

import (
	"errors"

	"golang.org/x/sys/unix"
)

// how opens a directory as a path-only descriptor, refusing any link.
var how = unix.OpenHow{
	Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
	Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
}

// OpenDir opens the absolute path dir as an O_PATH descriptor when every
// component of it exists, is a directory and is not a link; ok is false
// otherwise, whatever the reason, and nothing is left open. The caller
// closes fd.
func OpenDir(dir string) (fd int, ok bool) {
	for {
		fd, err := unix.Openat2(unix.AT_FDCWD, dir, &how)
		switch {
		case err == nil:
			return fd, true
		case errors.Is(err, unix.EINTR):
			continue
		default:
			return -1, false
		}
	}
}
