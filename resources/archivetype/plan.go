package archivetype

import (
	"fmt"
	"strings"

	"github.com/ccm-fleet/ccm/protocol"
)

// Noop messages, joined with ". " when several actions would be taken.
const (
	MsgDownload = "Would have downloaded"
	MsgExtract  = "Would have extracted"
	MsgCleanup  = "Would have cleaned up"
	MsgRemove   = "Would have removed"
)

// desired reports whether the archive is in the desired state, running the
// design's state checks in order: ensure absent; the creates file; the
// archive's existence (it must exist unless cleanup is set, and with
// cleanup it must be gone); owner and group; the checksum. When it is not,
// the reason names the first check that failed.
func desired(p *Properties, m *protocol.ArchiveMetadata) (bool, string) {
	if p.Ensure == EnsureAbsent {
		if m.ArchiveExists {
			return false, "archive file exists"
		}
		return true, ""
	}
	if p.Creates != "" && !m.CreatesExists {
		return false, fmt.Sprintf("creates file %s does not exist", p.Creates)
	}
	if !p.Cleanup && !m.ArchiveExists {
		return false, "archive file does not exist"
	}
	if p.Cleanup && m.ArchiveExists {
		return false, "archive file has not been cleaned up"
	}
	if !m.ArchiveExists {
		return true, ""
	}
	if m.Owner != p.Owner || m.Group != p.Group {
		return false, fmt.Sprintf("archive file is owned by %s:%s, not %s:%s", m.Owner, m.Group, p.Owner, p.Group)
	}
	if p.Checksum != "" && !strings.EqualFold(m.Checksum, p.Checksum) {
		return false, fmt.Sprintf("archive checksum is %s, not %s", m.Checksum, p.Checksum)
	}
	return true, ""
}

// plan is what an apply does, in this order.
type plan struct {
	remove   bool
	download bool
	extract  bool
	cleanup  bool
}

// decide computes the actions for a resource that is not in its desired
// state, following the apply flow of the design:
//
//   - absent: remove the archive file;
//   - download when the archive is missing, its checksum does not match, or
//     (when it is kept, cleanup false) its owner or group does not match;
//   - extract when extract_parent is set and a download happens or the
//     creates file is missing;
//   - clean up when cleanup is set.
func decide(p *Properties, m *protocol.ArchiveMetadata) plan {
	if p.Ensure == EnsureAbsent {
		return plan{remove: m.ArchiveExists}
	}
	var pl plan
	checksumMismatch := p.Checksum != "" && !strings.EqualFold(m.Checksum, p.Checksum)
	ownerMismatch := m.Owner != p.Owner || m.Group != p.Group
	pl.download = !m.ArchiveExists || checksumMismatch || (!p.Cleanup && ownerMismatch)
	pl.extract = p.ExtractParent != "" && (pl.download || !m.CreatesExists)
	pl.cleanup = p.Cleanup
	return pl
}

// changes reports whether the plan does anything.
func (pl plan) changes() bool {
	return pl.remove || pl.download || pl.extract || pl.cleanup
}

// noopMessage is what a noop says the plan would do: the message of each
// step it holds, in order.
func (pl plan) noopMessage() string {
	var msgs []string
	if pl.remove {
		msgs = append(msgs, MsgRemove)
	}
	if pl.download {
		msgs = append(msgs, MsgDownload)
	}
	if pl.extract {
		msgs = append(msgs, MsgExtract)
	}
	if pl.cleanup {
		msgs = append(msgs, MsgCleanup)
	}
	return strings.Join(msgs, ". ")
}
