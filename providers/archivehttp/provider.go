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
	fi, err := os.Stat(props.Name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, err
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("%s: %w", props.Name, ErrNotRegular)
	default:
		st.Ensure = archivetype.EnsurePresent
		meta.ArchiveExists = true
		meta.Size = fi.Size()
		meta.MTime = fi.ModTime().UTC()
		meta.Owner, meta.Group = accountNames(fi, props)
		if meta.Checksum, err = sha256File(ctx, props.Name); err != nil {
			return nil, err
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

// sha256File returns the hex SHA-256 of the file at name, honouring ctx.
func sha256File(ctx context.Context, name string) (string, error) {
	f, err := os.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, ctxReader{ctx: ctx, r: f}); err != nil {
		return "", fmt.Errorf("checksum %s: %w", name, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
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
