package archivetype_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources/archivetype"
)

// fakeProvider works on real files: Download writes content to the archive
// path and records the owner and group it was asked for, Extract writes the
// creates file, Status reports what is on disk.
type fakeProvider struct {
	content      []byte
	owner, group string // reported for an existing archive
	downloads    int
	extracts     int
	downloadErr  error
	extractErr   error
	skipWrite    bool // Download "succeeds" without writing
}

var _ archivetype.Provider = (*fakeProvider)(nil)

func (f *fakeProvider) Name() string { return "fake" }

func (f *fakeProvider) Download(_ context.Context, p *archivetype.Properties) error {
	f.downloads++
	if f.downloadErr != nil {
		return f.downloadErr
	}
	if f.skipWrite {
		return nil
	}
	f.owner, f.group = p.Owner, p.Group
	return os.WriteFile(p.Name, f.content, 0o640)
}

func (f *fakeProvider) Remove(_ context.Context, p *archivetype.Properties) error {
	fi, err := os.Lstat(p.Name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return fmt.Errorf("%s is a directory", p.Name)
	}
	return os.Remove(p.Name)
}

func (f *fakeProvider) Extract(_ context.Context, p *archivetype.Properties) error {
	f.extracts++
	if f.extractErr != nil {
		return f.extractErr
	}
	if err := os.MkdirAll(p.ExtractParent, 0o755); err != nil {
		return err
	}
	if p.Creates == "" {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(p.Creates), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p.Creates, []byte("extracted"), 0o644)
}

func (f *fakeProvider) Status(_ context.Context, p *archivetype.Properties) (*protocol.ArchiveState, error) {
	st := &protocol.ArchiveState{
		CommonState: protocol.NewCommonState(protocol.TypeArchive, p.Name, archivetype.EnsureAbsent),
		Metadata:    &protocol.ArchiveMetadata{Name: p.Name, Provider: "fake"},
	}
	data, err := os.ReadFile(p.Name)
	switch {
	case err == nil:
		sum := sha256.Sum256(data)
		st.Ensure = archivetype.EnsurePresent
		st.Metadata.ArchiveExists = true
		st.Metadata.Checksum = hex.EncodeToString(sum[:])
		st.Metadata.Size = int64(len(data))
		st.Metadata.Owner, st.Metadata.Group = f.owner, f.group
	case !errors.Is(err, fs.ErrNotExist):
		return nil, err
	}
	if p.Creates != "" {
		if _, err := os.Stat(p.Creates); err == nil {
			st.Metadata.CreatesExists = true
		}
	}
	return st, nil
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
