package filetype

import "errors"

var (
	// ErrSymlink is returned when the path of a file resource is a symbolic
	// link: the file type never writes, chowns or chmods through a link.
	ErrSymlink = errors.New("is a symbolic link; refusing to follow it")
	// ErrNotEmpty is returned when a non-empty directory would have to be
	// removed and force is not set.
	ErrNotEmpty = errors.New("directory is not empty; set force to remove it")
	// ErrUnsupportedFileType is returned when the path exists as something
	// other than a regular file, a directory or a symbolic link (a FIFO, a
	// socket, a device) and would have to be written or replaced.
	ErrUnsupportedFileType = errors.New("is not a regular file or a directory")
	// ErrDirectoryInTheWay is returned when a directory is where a file is
	// wanted: it is never replaced by the file, empty or not.
	ErrDirectoryInTheWay = errors.New("is a directory where a file should be; refusing to replace it (remove it, or ask for ensure: directory)")
	// ErrRemoveRoot is returned when removing / is asked for.
	ErrRemoveRoot = errors.New("refusing to remove /")
)
