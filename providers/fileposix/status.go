package fileposix

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/providers/internal/safefs"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/filetype"
)

// maxLinkTarget bounds the symbolic link target reported in Status.
const maxLinkTarget = 4096

// Status reports what is at name without following a symbolic link there:
// the parent directory is opened as a handle (see openParent) and name's
// last component is looked at, hashed and read relative to it with
// O_NOFOLLOW, so a swapped link can't make Status read something else. A
// missing path, or one that cannot be looked at for lack of permission
// (logged as a warning), is absent; an untrusted link on the way wraps
// filetype.ErrSymlink; any other error is returned.
// Metadata.Extended carries the numeric "uid" and "gid", and for a link its
// "target", for a special file its "type".
func (p *Provider) Status(ctx context.Context, name string) (*protocol.FileState, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if filepath.Clean(name) == "/" {
		fi, err := os.Lstat("/")
		return p.statusOf(ctx, name, nil, "", fi, err)
	}
	if d, base, ok := p.held(ctx, name); ok {
		return p.statusIn(ctx, name, d, base)
	}
	d, base, err := p.parentOf(name)
	if err != nil {
		return p.statusOf(ctx, name, nil, "", nil, err)
	}
	defer d.Close()
	return p.statusIn(ctx, name, d, base)
}

// statusIn is Status of base in the parent directory's handle d.
func (p *Provider) statusIn(ctx context.Context, name string, d *safefs.Dir, base string) (*protocol.FileState, error) {
	fi, err := d.Lstat(base)
	return p.statusOf(ctx, name, d, base, fi, err)
}

// statusOf builds Status's answer from what lstat gave for base in d (fi,
// err): absent when missing or not looked at for lack of permission, else
// the metadata, and the checksum or link target read through d.
func (p *Provider) statusOf(ctx context.Context, name string, d *safefs.Dir, base string, fi fs.FileInfo, err error) (*protocol.FileState, error) {
	st := &protocol.FileState{
		CommonState: protocol.NewCommonState(protocol.TypeFile, name, filetype.EnsureAbsent),
		Metadata:    &protocol.FileMetadata{Name: name, Provider: ProviderName},
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return st, nil
	case errors.Is(err, fs.ErrPermission):
		resources.Logger(ctx, p.log).Warn("cannot look at file, reporting it absent", "file", name, "error", err)
		return st, nil
	case err != nil:
		return nil, fmt.Errorf("status: %w", err)
	}
	p.metadata(st.Metadata, fi)

	md := st.Metadata
	switch {
	case fi.Mode().IsRegular():
		st.Ensure = filetype.EnsurePresent
		sum, err := checksumNoFollow(ctx, d, base)
		if err != nil {
			return nil, fmt.Errorf("status: checksum: %w", err)
		}
		md.Checksum = sum
	case fi.IsDir():
		st.Ensure = filetype.EnsureDirectory
	case fi.Mode()&fs.ModeSymlink != 0:
		st.Ensure = filetype.EnsureSymlink
		if target, err := d.Readlink(base); err == nil {
			if len(target) > maxLinkTarget {
				target = target[:maxLinkTarget]
			}
			md.Extended["target"] = target
		}
	default:
		st.Ensure = filetype.EnsureSpecial
		md.Extended["type"] = fi.Mode().Type().String()
	}
	return st, nil
}

// metadata fills md's size, mtime, owner, group, mode and numeric ids from fi.
func (p *Provider) metadata(md *protocol.FileMetadata, fi fs.FileInfo) {
	md.Size = fi.Size()
	md.MTime = fi.ModTime().UTC()
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		md.Owner = p.names.user(sys.Uid)
		md.Group = p.names.group(sys.Gid)
		md.Mode = filetype.FormatMode(sys.Mode & 0o7777)
		md.Extended = map[string]any{"uid": sys.Uid, "gid": sys.Gid}
	} else {
		md.Mode = filetype.FormatMode(uint32(fi.Mode().Perm()))
		md.Extended = map[string]any{}
	}
}

// checksumNoFollow hashes the regular file base in d through a descriptor
// opened with O_NOFOLLOW, so a link swapped in after lstat is not followed.
func checksumNoFollow(ctx context.Context, d *safefs.Dir, base string) (string, error) {
	name := d.Join(base)
	f, err := d.Open(base)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s %w", name, filetype.ErrUnsupportedFileType)
	}
	return filetype.ChecksumReader(ctx, f)
}

func lookupID(name string, byName func(string) (string, error)) (int, error) {
	id, err := byName(name)
	if err != nil {
		n, nerr := strconv.ParseUint(name, 10, 32)
		if nerr != nil {
			return 0, err
		}
		return int(n), nil
	}
	n, err := strconv.ParseUint(id, 10, 32)
	if err != nil {
		return 0, err
	}
	return int(n), nil
}
