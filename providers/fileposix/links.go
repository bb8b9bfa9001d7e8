package fileposix

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/ccm-fleet/ccm/resources/filetype"
)

// maxLinkHops bounds how many symbolic links checkLinks follows in one path
// (the kernel's own limit is 40).
const maxLinkHops = 40

// checkLinks refuses to change anything below dir when the way to it
// passes through a symbolic link that another user could have planted: a
// link in dir or any of its parents (and in the targets of those links) is
// followed only when it is owned by root or by this process's user, the
// way the kernel's protected_symlinks trusts links in shared directories.
// Links root made, such as /var/run -> /run, keep working; a link an
// unprivileged user put in /tmp to redirect a root-owned write does not.
// The error wraps filetype.ErrSymlink.
func checkLinks(dir string) error {
	hops := 0
	return checkLinksIn(filepath.Clean(dir), &hops)
}

func checkLinksIn(dir string, hops *int) error {
	if !filepath.IsAbs(dir) {
		return nil // the resource validators only let absolute paths through
	}
	prefix := "/"
	for part := range strings.SplitSeq(strings.TrimPrefix(dir, "/"), "/") {
		if part == "" {
			continue
		}
		prefix = filepath.Join(prefix, part)
		fi, err := os.Lstat(prefix)
		if errors.Is(err, fs.ErrNotExist) {
			return nil // nothing further down exists to be redirected
		}
		if err != nil {
			return fmt.Errorf("%s: %w", prefix, err)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			continue
		}
		if *hops++; *hops > maxLinkHops {
			return fmt.Errorf("%s: %w", dir, syscall.ELOOP)
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid != 0 && int(st.Uid) != os.Geteuid() {
			return fmt.Errorf("%s: the way to it passes through %s, owned by uid %d (not root): %w",
				dir, prefix, st.Uid, filetype.ErrSymlink)
		}
		target, err := os.Readlink(prefix)
		if err != nil {
			return fmt.Errorf("%s: %w", prefix, err)
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(prefix), target)
		}
		if err := checkLinksIn(filepath.Clean(target), hops); err != nil {
			return err
		}
	}
	return nil
}
