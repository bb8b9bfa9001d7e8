package fileposix

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/ccm-fleet/ccm/providers/internal/safefs"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/filetype"
)

// maxTempBase bounds the part of the target's name used in the temporary
// file's name, keeping it under the usual 255-byte name limit.
const maxTempBase = 200

// Store writes name atomically with contents, or with the bytes of the local
// file source when source is set, owned by owner:group with mode. The parent
// directory is opened once as a handle (see openParent); the temporary file
// (".<base>.ccm-*") is created in it with O_CREAT|O_EXCL|O_NOFOLLOW,
// chmodded, written, chowned, synced (fsync) and closed through its
// descriptor, then renamed over base within the same handle; on any failure
// it is removed from that same handle. The parent directory must exist, and
// name must not be a symbolic link (filetype.ErrSymlink), a directory or a
// special file.
//
// Durability: after a crash, name holds either the whole old file or the
// whole new one, never a part or an empty file. That needs the fsync of the
// temporary file before the rename (without it a filesystem may make the
// rename durable before the data, the zero-length file of delayed
// allocation), and it is kept. The directory is not synced after the
// rename: that fsync only makes the rename itself durable at once, so that
// a change reported as done survives a crash of the machine, which nothing
// else on the reply's way promises (the replay cache, the audit log and the
// history stream's default store are not synced per record either). A
// crash before the filesystem commits the rename (on ext4 within its commit
// interval, 5 s by default, or the next fsync anyone makes) leaves the old
// file, which the next run finds different and writes again, and may leave
// the synced temporary file beside it, as a crash during the write always
// could.
func (p *Provider) Store(ctx context.Context, name string, contents []byte, source string, owner, group, mode string) error {
	t, err := p.checkTarget(ctx, name, owner, group, mode)
	if err != nil {
		return err
	}
	if d, base, ok := p.held(ctx, name); ok {
		return p.storeIn(ctx, d, base, contents, source, t)
	}
	d, base, err := p.openParent(name)
	if err != nil {
		return err
	}
	defer d.Close()
	return p.storeIn(ctx, d, base, contents, source, t)
}

// storeIn is Store's write of base in the parent directory's handle d, with
// the attributes t already resolved: the temporary file is created, written,
// synced and renamed over base, all relative to d.
func (p *Provider) storeIn(ctx context.Context, d *safefs.Dir, base string, contents []byte, source string, t target) (err error) {
	if err := checkReplaceable(d, base); err != nil {
		return err
	}

	var r io.Reader = bytes.NewReader(contents)
	if source != "" {
		sf, err := openSource(source)
		if err != nil {
			return err
		}
		defer sf.Close()
		r = sf
	}

	prefix := base
	if len(prefix) > maxTempBase {
		prefix = prefix[:maxTempBase]
	}
	tmp, tmpName, err := d.CreateTemp("." + prefix + ".ccm-")
	if err != nil {
		return fmt.Errorf("could not create temporary file: %w", err)
	}
	renamed := false
	defer func() {
		if err != nil {
			_ = tmp.Close()
			if !renamed {
				_ = d.Remove(tmpName)
			}
		}
	}()

	if err := tmp.Chmod(t.perm); err != nil {
		return fmt.Errorf("could not chmod temporary file: %w", err)
	}
	if _, err := io.Copy(tmp, filetype.ContextReader(ctx, r)); err != nil {
		return fmt.Errorf("could not write temporary file: %w", err)
	}
	if err := tmp.Chown(t.uid, t.gid); err != nil {
		return fmt.Errorf("could not chown temporary file: %w", err)
	}
	if err := p.syncFile(tmp); err != nil {
		return fmt.Errorf("could not sync temporary file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("could not close temporary file: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := d.Rename(tmpName, base); err != nil {
		return fmt.Errorf("could not rename temporary file: %w", err)
	}
	renamed = true
	resources.Logger(ctx, p.log).Debug("stored file", "file", t.name, "owner", t.owner, "group", t.group, "mode", t.mode)
	return nil
}

// syncFile flushes a written temporary file to the disk before it is
// renamed into place: p.sync when set (tests), else fsync.
func (p *Provider) syncFile(f *os.File) error {
	if p.sync != nil {
		return p.sync(f)
	}
	return f.Sync()
}

// CreateDirectory creates dir, and any missing parents with the same mode
// (less the umask), or takes the existing directory, then sets its owner,
// group and mode through a descriptor; the explicit chmod undoes the umask.
// Parents are created and opened through handles (safefs.MkdirAll). A
// symbolic link or any other non-directory at dir is refused.
func (p *Provider) CreateDirectory(ctx context.Context, dir, owner, group, mode string) error {
	t, err := p.checkTarget(ctx, dir, owner, group, mode)
	if err != nil {
		return err
	}
	perm, uid, gid := t.perm, t.uid, t.gid
	clean := filepath.Clean(dir)
	if clean == "/" {
		return setRootAttributes(uid, gid, perm)
	}
	parent, err := safefs.MkdirAll(filepath.Dir(clean), perm)
	if err != nil {
		return fmt.Errorf("could not create directory: %w", err)
	}
	defer parent.Close()
	base := filepath.Base(clean)
	fi, err := parent.Lstat(base)
	if errors.Is(err, fs.ErrNotExist) {
		if err = parent.Mkdir(base, perm); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("could not create directory: %w", err)
		}
		fi, err = parent.Lstat(base)
	}
	switch {
	case err != nil:
		return err
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("%s %w", dir, filetype.ErrSymlink)
	case !fi.IsDir():
		return fmt.Errorf("%s exists and is not a directory: %w", dir, syscall.ENOTDIR)
	}
	if err := setAttributes(parent, base, uid, gid, perm, true); err != nil {
		return err
	}
	resources.Logger(ctx, p.log).Debug("created directory", "dir", dir, "owner", owner, "group", group, "mode", mode)
	return nil
}

// SetAttributes sets the owner, group and mode of the existing regular file
// or directory name through a descriptor opened with O_NOFOLLOW relative to
// its parent's handle: a symbolic link is refused, and the content is not
// touched.
func (p *Provider) SetAttributes(ctx context.Context, name, owner, group, mode string) error {
	t, err := p.checkTarget(ctx, name, owner, group, mode)
	if err != nil {
		return err
	}
	d, base, err := p.parentOf(name)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := setAttributes(d, base, t.uid, t.gid, t.perm, false); err != nil {
		return err
	}
	resources.Logger(ctx, p.log).Debug("set attributes", "file", name, "owner", owner, "group", group, "mode", mode)
	return nil
}

// Remove removes name: a file, link or empty directory with unlinkat, a
// non-empty directory tree only when force is set (otherwise
// filetype.ErrNotEmpty), descending through handles. A link is removed,
// never what it points to. A missing name is not an error; / is never
// removed (filetype.ErrRemoveRoot).
func (p *Provider) Remove(ctx context.Context, name string, force bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if filepath.Clean(name) == "/" {
		return filetype.ErrRemoveRoot
	}
	if err := filetype.ValidatePath(name); err != nil {
		return err
	}
	d, base, fi, err := safefs.OpenExisting(name)
	if err != nil || d == nil {
		return err
	}
	defer d.Close()
	if fi.IsDir() && force {
		if err := d.RemoveAll(base); err != nil {
			return fmt.Errorf("could not remove directory: %w", err)
		}
		resources.Logger(ctx, p.log).Debug("removed directory tree", "dir", name)
		return nil
	}
	if err := d.Remove(base); err != nil {
		if errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST) {
			return fmt.Errorf("%s: %w", name, filetype.ErrNotEmpty)
		}
		return err
	}
	resources.Logger(ctx, p.log).Debug("removed", "file", name)
	return nil
}

// setAttributes chowns then chmods base in d through an O_NOFOLLOW
// descriptor; chmod comes last so the mode is exactly perm whatever chown
// cleared. What is there is looked at before it is opened (no device is
// opened) and again through the descriptor.
func setAttributes(d *safefs.Dir, base string, uid, gid int, perm fs.FileMode, wantDir bool) error {
	name := d.Join(base)
	fi, err := d.Lstat(base)
	if err != nil {
		return err
	}
	if err := checkManageable(name, fi, wantDir); err != nil {
		return err
	}
	f, err := d.Open(base)
	if err != nil {
		return err
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return err
	}
	if err := checkManageable(name, fi, wantDir); err != nil {
		return err
	}
	if err := f.Chown(uid, gid); err != nil {
		return fmt.Errorf("could not chown: %w", err)
	}
	if err := f.Chmod(perm); err != nil {
		return fmt.Errorf("could not chmod: %w", err)
	}
	return nil
}

// setRootAttributes chowns and chmods / itself, which has no parent.
func setRootAttributes(uid, gid int, perm fs.FileMode) error {
	d, err := safefs.Open("/")
	if err != nil {
		return err
	}
	defer d.Close()
	f, err := d.OpenSelf()
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Chown(uid, gid); err != nil {
		return fmt.Errorf("could not chown: %w", err)
	}
	if err := f.Chmod(perm); err != nil {
		return fmt.Errorf("could not chmod: %w", err)
	}
	return nil
}

func checkManageable(name string, fi fs.FileInfo, wantDir bool) error {
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("%s %w", name, filetype.ErrSymlink)
	case wantDir && !fi.IsDir():
		return fmt.Errorf("%s exists and is not a directory: %w", name, syscall.ENOTDIR)
	case !fi.IsDir() && !fi.Mode().IsRegular():
		return fmt.Errorf("%s %w", name, filetype.ErrUnsupportedFileType)
	}
	return nil
}

// checkReplaceable allows Store to rename over base in d only when nothing
// is there or a regular file is.
func checkReplaceable(d *safefs.Dir, base string) error {
	name := d.Join(base)
	fi, err := d.Lstat(base)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("%s %w", name, filetype.ErrSymlink)
	case fi.IsDir():
		return fmt.Errorf("%s is a directory: %w", name, syscall.EISDIR)
	case !fi.Mode().IsRegular():
		return fmt.Errorf("%s %w", name, filetype.ErrUnsupportedFileType)
	}
	return nil
}

// OpenSource opens the local source file, which must be a regular file,
// through directory handles (safefs.OpenRead): its directories and a link
// at it are followed only when root or this process's user owns them, and
// nothing is resolved by path again, so the file a scope judged is the
// file read. It honours ctx.
func (p *Provider) OpenSource(ctx context.Context, source string) (*os.File, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return openSource(source)
}

// openSource opens the local source file, which must be a regular file,
// through directory handles (see OpenSource).
func openSource(source string) (*os.File, error) {
	f, err := safefs.OpenRead(source)
	if err != nil {
		return nil, fmt.Errorf("source: %w", err)
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%s %w", source, filetype.ErrUnsupportedFileType)
	}
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("source: %w", err)
	}
	return f, nil
}

// target is what a write sets, resolved before anything is touched: the
// mode and ids, and the path and names as asked (for the log).
type target struct {
	name               string
	perm               fs.FileMode
	uid, gid           int
	owner, group, mode string
}

// checkTarget validates a path and resolves the mode, owner and group the
// write operations set, before anything is touched.
func (p *Provider) checkTarget(ctx context.Context, name, owner, group, mode string) (target, error) {
	if err := ctx.Err(); err != nil {
		return target{}, err
	}
	if err := filetype.ValidatePath(name); err != nil {
		return target{}, err
	}
	perm, err := filetype.ParseMode(mode)
	if err != nil {
		return target{}, err
	}
	uid, gid, err := p.names.ownerGroup(owner, group)
	if err != nil {
		return target{}, err
	}
	return target{name: name, perm: perm, uid: uid, gid: gid, owner: owner, group: group, mode: mode}, nil
}
