package scaffoldchoria

import (
	"context"
	"io"
	"os"
	"path"
	"path/filepath"

	"github.com/choria-io/scaffold"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/providers/internal/safefs"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/scaffoldtype"
	"github.com/ccm-fleet/ccm/resources/templates"
)

var _ scaffoldtype.Differ = (*Provider)(nil)

// Diff renders props in noop mode and says what an apply would change: the
// files it would add and purge (with ensure absent: remove), and for each
// file that would be updated the unified diff of its current content
// against the rendered one, or a summary line when either is binary or
// over limit bytes. A sensitive scaffold gets no content, only the lists.
func (p *Provider) Diff(ctx context.Context, env *templates.Env, props *scaffoldtype.Properties, limit int64) (*protocol.Diff, error) {
	d := &protocol.Diff{}
	if props.Ensure == scaffoldtype.EnsureAbsent {
		st, err := p.Status(ctx, env, props)
		if err != nil {
			return nil, err
		}
		d.Purged = append(append(d.Purged, st.Metadata.Changed...), st.Metadata.Stable...)
		return d, nil
	}
	inspect := func(stage string, tgt *safefs.Dir, result []scaffold.ManagedFile) {
		for _, f := range result {
			full := filepath.Join(props.Name, filepath.FromSlash(f.Path))
			switch f.Action {
			case scaffold.FileActionAdd:
				d.Added = append(d.Added, full)
			case scaffold.FileActionRemove:
				if props.Purge {
					d.Purged = append(d.Purged, full)
				}
			case scaffold.FileActionUpdate:
				fd := protocol.FileDiff{Path: full}
				if props.Sensitive {
					fd.Summary = protocol.DiffSensitive
				} else {
					fd.Content, fd.Summary = fileDiff(filepath.Join(stage, filepath.FromSlash(f.Path)), tgt, f.Path, full, limit)
				}
				d.Files = append(d.Files, fd)
			}
		}
	}
	if _, err := p.renderThen(ctx, env, props, true, inspect); err != nil {
		return nil, err
	}
	return d, nil
}

// fileDiff compares the target's file rel (through tgt, never following a
// link) with the staged rendering.
func fileDiff(staged string, tgt *safefs.Dir, rel, full string, limit int64) (string, string) {
	want, wantSize, err := readUpTo(func() (*os.File, error) { return os.Open(staged) }, limit)
	if err != nil {
		return "", "content differs"
	}
	var have []byte
	haveSize := int64(0)
	if tgt != nil {
		dir, base := path.Split(rel)
		sub, err := tgt.Sub(dir, false, 0o755)
		if err != nil {
			return "", "content differs"
		}
		defer sub.Close()
		have, haveSize, err = readUpTo(func() (*os.File, error) { return sub.Open(base) }, limit)
		if err != nil {
			return "", "content differs (the current file is not a regular file)"
		}
	}
	if wantSize > limit || haveSize > limit {
		return "", resources.SizeSummary(limit, haveSize, "", wantSize, "")
	}
	return resources.ContentDiff(full, have, want)
}

// readUpTo returns the size of the regular file open returns and, when it
// is at most limit bytes, its content.
func readUpTo(open func() (*os.File, error), limit int64) ([]byte, int64, error) {
	f, err := open()
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	if !fi.Mode().IsRegular() {
		return nil, 0, os.ErrInvalid
	}
	if fi.Size() > limit {
		return nil, fi.Size(), nil
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, 0, err
	}
	return b, int64(len(b)), nil
}
