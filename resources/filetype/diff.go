package filetype

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources"
)

// ContentReader is implemented by providers that can read a managed file's
// current content, for diffs. ReadContent returns at most limit bytes of
// name and whether there was more; a missing file reads as empty. It never
// follows a symbolic link at name and honours ctx.
type ContentReader interface {
	ReadContent(ctx context.Context, name string, limit int64) (data []byte, over bool, err error)
}

// diffFor says how the file differs from its desired state under the plan:
// ensure and attribute changes, and when the content is to be stored a
// unified diff of the current content against the desired one, or a
// summary line (sizes and checksums) for binary content, content over the
// diff limit, a provider that cannot read content, or a sensitive file
// (whose content is never read). It never fails: what cannot be read is
// said in the summary.
func diffFor(ctx context.Context, ac *resources.ApplyContext, fp Provider, props *Properties, want desired, cur *protocol.FileState, pl plan, content []byte, source string) *protocol.Diff {
	if pl.action == actionNone {
		return nil
	}
	d := &protocol.Diff{}
	md := cur.Metadata
	if md == nil {
		md = &protocol.FileMetadata{}
	}
	if cur.Ensure != want.ensure {
		d.Changes = append(d.Changes, protocol.Change{Field: "ensure", From: cur.Ensure, To: want.ensure})
	}
	if want.ensure != EnsureAbsent && cur.Ensure == want.ensure {
		if !idMatches(want.owner, md.Owner, md.Extended["uid"]) {
			d.Changes = append(d.Changes, protocol.Change{Field: "owner", From: md.Owner, To: want.owner})
		}
		if !idMatches(want.group, md.Group, md.Extended["gid"]) {
			d.Changes = append(d.Changes, protocol.Change{Field: "group", From: md.Group, To: want.group})
		}
		if md.Mode != want.mode {
			d.Changes = append(d.Changes, protocol.Change{Field: "mode", From: md.Mode, To: want.mode})
		}
	}
	if pl.action != actionStore || !want.manageContent {
		return d
	}
	curSum, curSize := "", int64(0)
	if cur.Ensure == EnsurePresent {
		curSum, curSize = md.Checksum, md.Size
	}
	if curSum == want.checksum {
		return d
	}
	wantSize := int64(len(content))
	var src *os.File
	if source != "" {
		// One open, the way the provider reads it, for the size and the
		// content shown.
		f, err := openSource(ctx, fp, source)
		if err == nil {
			defer f.Close()
			if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
				src, wantSize = f, fi.Size()
			}
		}
	}
	summary := func(what string) string {
		return fmt.Sprintf("%s: current %d bytes%s, desired %d bytes sha256:%s", what, curSize, sumText(curSum), wantSize, want.checksum)
	}
	limit := ac.Limit()
	if props.Sensitive {
		d.Summary = protocol.DiffSensitive
		return d
	}
	if curSize > limit || wantSize > limit {
		d.Summary = resources.SizeSummary(limit, curSize, curSum, wantSize, want.checksum)
		return d
	}
	var have []byte
	if cur.Ensure == EnsurePresent {
		cr, ok := fp.(ContentReader)
		if !ok {
			d.Summary = summary("content differs")
			return d
		}
		b, over, err := cr.ReadContent(ctx, props.Name, limit)
		if err != nil || over {
			d.Summary = summary("content differs")
			return d
		}
		have = b
	}
	wantContent := content
	if source != "" {
		if src == nil {
			d.Summary = summary("content differs")
			return d
		}
		b, err := readLimitedFrom(src, limit)
		if err != nil {
			d.Summary = summary("content differs")
			return d
		}
		wantContent = b
	}
	d.Content, d.Summary = resources.ContentDiff(props.Name, have, wantContent)
	return d
}

func sumText(sum string) string {
	if sum == "" {
		return ""
	}
	return " sha256:" + sum
}

// readLimitedFrom reads at most limit bytes of f; more is an error.
func readLimitedFrom(f *os.File, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s is over %d bytes", f.Name(), limit)
	}
	return b, nil
}
