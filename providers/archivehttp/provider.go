package archivehttp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/user"
	"strconv"
	"syscall"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/providers/internal/safefs"
	"github.com/ccm-fleet/ccm/resources/archivetype"
)

// Provider downloads and extracts archives over HTTP and HTTPS. Make one
// with Factory.New.
type Provider struct {
	log *slog.Logger
	cfg config
}

var _ archivetype.Provider = (*Provider)(nil)

// Name returns "http".
func (p *Provider) Name() string { return ProviderName }

// Status reports the archive file (size, mtime, owner and group names,
// SHA-256) and whether the creates file exists. Ensure is present when the
// archive file exists, absent otherwise. A path that exists but is not a
// regular file is an error wrapping ErrNotRegular.
func (p *Provider) Status(ctx context.Context, props *archivetype.Properties) (*protocol.ArchiveState, error) {
	st := &protocol.ArchiveState{
		CommonState: protocol.NewCommonState(protocol.TypeArchive, props.Name, archivetype.EnsureAbsent),
		Metadata:    &protocol.ArchiveMetadata{Name: props.Name, Provider: ProviderName},
	}
	meta := st.Metadata
	f, err := openArchive(props.Name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, err
	default:
		defer f.Close()
		fi, err := f.Stat()
		if err != nil {
			return nil, err
		}
		st.Ensure = archivetype.EnsurePresent
		meta.ArchiveExists = true
		meta.Size = fi.Size()
		meta.MTime = fi.ModTime().UTC()
		meta.Owner, meta.Group = accountNames(fi, props)
		if meta.Checksum, err = sha256File(ctx, f); err != nil {
			return nil, fmt.Errorf("checksum %s: %w", props.Name, err)
		}
	}
	if props.Creates != "" {
		_, err := os.Stat(props.Creates)
		switch {
		case err == nil:
			meta.CreatesExists = true
		case !errors.Is(err, fs.ErrNotExist):
			return nil, err
		}
	}
	return st, nil
}

// sha256File returns the hex SHA-256 of f from its start, honouring ctx.
func sha256File(ctx context.Context, f *os.File) (string, error) {
	h := sha256.New()
	if _, err := io.Copy(h, ctxReader{ctx: ctx, r: io.NewSectionReader(f, 0, 1<<62)}); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// openArchive opens the archive file name for reading through a handle on
// its directory, with O_NOFOLLOW: a link at name, or an untrusted one on
// the way, wraps filetype.ErrSymlink; a missing file or directory
// fs.ErrNotExist; anything but a regular file ErrNotRegular.
func openArchive(name string) (*os.File, error) {
	d, base, err := safefs.OpenParent(name)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	f, err := d.Open(base)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%s: %w", name, ErrNotRegular)
	}
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	return f, nil
}

// accountNames returns the owner and group names of fi. When the resource
// names its owner or group by numeric id and the id matches, the id is
// reported as given so the comparison with the properties holds.
func accountNames(fi fs.FileInfo, props *archivetype.Properties) (owner, group string) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "", ""
	}
	uid, gid := strconv.FormatUint(uint64(st.Uid), 10), strconv.FormatUint(uint64(st.Gid), 10)
	owner, group = uid, gid
	if props.Owner == uid {
		owner = props.Owner
	} else if u, err := user.LookupId(uid); err == nil {
		owner = u.Username
	}
	if props.Group == gid {
		group = props.Group
	} else if g, err := user.LookupGroupId(gid); err == nil {
		group = g.Name
	}
	return owner, group
}

// lookupIDs resolves owner and group (names or numeric ids) to ids.
func lookupIDs(owner, group string) (uid, gid int, err error) {
	if uid, err = strconv.Atoi(owner); err != nil {
		u, lerr := user.Lookup(owner)
		if lerr != nil {
			return 0, 0, fmt.Errorf("owner %q: %w", owner, ErrUnknownAccount)
		}
		if uid, err = strconv.Atoi(u.Uid); err != nil {
			return 0, 0, fmt.Errorf("owner %q: uid %q: %w", owner, u.Uid, err)
		}
	}
	if gid, err = strconv.Atoi(group); err != nil {
		g, lerr := user.LookupGroup(group)
		if lerr != nil {
			return 0, 0, fmt.Errorf("group %q: %w", group, ErrUnknownAccount)
		}
		if gid, err = strconv.Atoi(g.Gid); err != nil {
			return 0, 0, fmt.Errorf("group %q: gid %q: %w", group, g.Gid, err)
		}
	}
	return uid, gid, nil
}

// ctxReader fails reads once ctx is done, so long copies stop on cancel.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(b []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(b)
}

// Remove deletes the archive file through a handle on its directory
// (safefs.OpenParent: untrusted links on the way wrap filetype.ErrSymlink);
// a missing file or directory is not an error, a directory at the path is.
func (p *Provider) Remove(_ context.Context, props *archivetype.Properties) error {
	d, base, fi, err := safefs.OpenExisting(props.Name)
	if err != nil || d == nil {
		return err
	}
	defer d.Close()
	if fi.IsDir() {
		return fmt.Errorf("%s is a directory", props.Name)
	}
	if err := d.Remove(base); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
