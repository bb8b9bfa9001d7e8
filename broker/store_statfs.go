//go:build linux || darwin || freebsd || netbsd || openbsd

package broker

import "syscall"

// freeSpace is the space of dir's file system available to this process.
func freeSpace(dir string) (uint64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return uint64(st.Bavail) * uint64(st.Bsize), nil //nolint:unconvert // field types differ by platform
}
