//go:build !(linux || darwin || freebsd || netbsd || openbsd)

package broker

import "errors"

// freeSpace is not known on this platform.
func freeSpace(string) (uint64, error) {
	return 0, errors.New("free space is not known on this platform")
}
