package lab

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ccm-fleet/ccm/providers/apt/apttest"
)

// privateStateDirs are the directories of the machine's package state each
// host gets a copy of at boot, taken while nothing changes them, instead of
// seeing the machine's live through its overlay (where a dpkg run on the
// machine, half done, made a host's apt-get refuse to work: "dpkg was
// interrupted").
//
//   - /var/lib/dpkg: dpkg's database (status, the per-package info files,
//     the journal in updates/ that says a run is under way).
//   - /var/lib/apt: apt's side of it, kept with dpkg's so that the two
//     agree: extended_states (which packages were installed as
//     dependencies) and the lists of every source, which `apt-get update`
//     and the specs' own test source rewrite on the machine.
//
// /var/cache/apt is not copied: it holds downloaded .debs, which apt checks
// against the lists' hashes before it uses one, and binary caches that apt
// checks against the lists and dpkg's status and rebuilds when stale; a
// host writes its own into its upper layer. It can also be large on a
// developer's machine, and the copy is made for every lab.
func privateStateDirs() []string { return []string{"/var/lib/dpkg", "/var/lib/apt"} }

// machineLocks are the fcntl locks a process changing the machine's package
// state holds, in the order apt and dpkg take them: dpkg's frontend lock,
// dpkg's own, then apt's lock on its lists (`apt-get update`).
func machineLocks() []string {
	return []string{"/var/lib/dpkg/lock-frontend", "/var/lib/dpkg/lock", "/var/lib/apt/lists/lock"}
}

// StateLockTimeout bounds how long Start waits for each of the machine's
// package locks (machineLocks) before it gives up, booting nothing, with an
// error naming the holder: as long as apt's default DPkg::Lock::Timeout in
// this project (providers/apt DefaultLockTimeout), so an apt-get beside
// `make lab` gets to finish.
const StateLockTimeout = 2 * time.Minute

// snapshotPackageState writes the machine's package state
// (privateStateDirs) into the tar file path, as a tree to unpack into a
// host's upper layer: var/lib/dpkg and so on, each marked opaque for
// overlayfs (the xattr trusted.overlay.opaque, in a PAX record), so that
// nothing of the machine's directory shows through beside the copy. It
// holds the machine-wide lock of the specs that run dpkg on the machine
// (apttest.LockHost, waiting as long as ctx allows) and dpkg's and apt's
// own locks (each bounded by StateLockTimeout) meanwhile, so the copy is
// never of a run half done. A tar, not a tree of files: one file is
// written to the machine's disk (a tree of a few thousand files took 1 to
// 3 s there), and each host unpacks it into its tmpfs in about 0.1 s.
func snapshotPackageState(ctx context.Context, path string) error {
	release, err := apttest.LockHost(ctx)
	if err != nil {
		return fmt.Errorf("lab: copying the machine's package state: %w", err)
	}
	defer release()
	for _, lock := range machineLocks() {
		unlock, err := lockFile(ctx, lock, StateLockTimeout)
		if err != nil {
			return fmt.Errorf("lab: copying the machine's package state: %w; no host was booted", err)
		}
		defer unlock()
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	tw := tar.NewWriter(f)
	err = writeState(tw)
	if cerr := tw.Close(); err == nil {
		err = cerr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("lab: copying the machine's package state: %w", err)
	}
	return nil
}

// writeState writes each of privateStateDirs that the machine has into tw,
// after the directories above it (so that the host's merged var and
// var/lib keep the machine's owner and mode, which overlayfs takes from
// the topmost layer).
func writeState(tw *tar.Writer) error {
	parents := map[string]bool{}
	for _, top := range privateStateDirs() {
		if _, err := os.Lstat(top); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		var above []string
		for d := filepath.Dir(top); d != "/"; d = filepath.Dir(d) {
			above = append([]string{d}, above...)
		}
		for _, d := range above {
			if !parents[d] {
				parents[d] = true
				if err := writeEntry(tw, d, nil); err != nil {
					return err
				}
			}
		}
		err := filepath.WalkDir(top, func(p string, _ fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if p == top {
				return writeEntry(tw, p, map[string]string{"SCHILY.xattr.trusted.overlay.opaque": "y"})
			}
			return writeEntry(tw, p, nil)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// writeEntry writes the machine's file p (a directory, a regular file or a
// symbolic link; anything else is left out) into tw, named relative to /,
// with its owner, mode and modification time, and the PAX records pax.
func writeEntry(tw *tar.Writer, p string, pax map[string]string) error {
	fi, err := os.Lstat(p)
	if err != nil {
		return err
	}
	link := ""
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		if link, err = os.Readlink(p); err != nil {
			return err
		}
	case !fi.IsDir() && !fi.Mode().IsRegular():
		return nil
	}
	hdr, err := tar.FileInfoHeader(fi, link)
	if err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	hdr.Name = strings.TrimPrefix(p, "/")
	hdr.Uname, hdr.Gname = "", "" // numeric owners: the same machine
	hdr.AccessTime, hdr.ChangeTime = time.Time{}, time.Time{}
	hdr.PAXRecords = pax
	hdr.Format = tar.FormatPAX
	if err := tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	if !fi.Mode().IsRegular() {
		return nil
	}
	src, err := os.Open(p)
	if err != nil {
		return err
	}
	defer src.Close()
	if _, err := io.CopyN(tw, src, hdr.Size); err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	return nil
}

// lockFile takes an fcntl write lock on the whole of path, as dpkg and apt
// do (creating the file, mode 0640, when missing), trying again every 50
// ms while another process holds it, for at most timeout (and while ctx
// lasts). When the time runs out it returns an error naming the holder. A
// path whose directory does not exist has nothing to guard: it is not
// locked. The returned function releases the lock.
func lockFile(ctx context.Context, path string, timeout time.Duration) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o640)
	if errors.Is(err, fs.ErrNotExist) {
		return func() {}, nil // no such directory: nothing there to change
	}
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	expired := time.NewTimer(timeout)
	defer expired.Stop()
	for {
		lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: 0, Len: 0}
		err := unix.FcntlFlock(f.Fd(), unix.F_SETLK, &lk)
		if err == nil {
			return func() { _ = f.Close() }, nil // closing drops the lock
		}
		if err != unix.EAGAIN && err != unix.EACCES {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		select {
		case <-expired.C:
			holder := lockHolder(f)
			f.Close()
			return nil, fmt.Errorf("lock %s held by %s for longer than %s", path, holder, timeout)
		case <-ctx.Done():
			holder := lockHolder(f)
			f.Close()
			return nil, fmt.Errorf("lock %s held by %s: %w", path, holder, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// lockHolder names the process holding an fcntl lock on f, as the kernel
// reports it (F_GETLK).
func lockHolder(f *os.File) string {
	lk := unix.Flock_t{Type: unix.F_WRLCK}
	if err := unix.FcntlFlock(f.Fd(), unix.F_GETLK, &lk); err != nil || lk.Type == unix.F_UNLCK || lk.Pid <= 0 {
		return "another process"
	}
	pid := strconv.Itoa(int(lk.Pid))
	comm, err := os.ReadFile("/proc/" + pid + "/comm")
	if err != nil {
		return "process " + pid
	}
	return "process " + pid + " (" + strings.TrimSpace(string(comm)) + ")"
}
