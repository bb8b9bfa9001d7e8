package archivetype

import (
	"fmt"
	"strings"

	"github.com/ccm-fleet/ccm/protocol"
)

// diffFor says what the plan does, as changes: "download" (the URL with
// credentials redacted, from the archive's current checksum to the wanted
// one), "extract" (into extract_parent, the creates file when set),
// "cleanup" and "remove" of the archive file, and owner/group of a kept
// archive that differ.
func diffFor(p *Properties, m *protocol.ArchiveMetadata, pl plan) *protocol.Diff {
	d := &protocol.Diff{}
	sum := func(s string) string {
		if s == "" {
			return ""
		}
		return "sha256:" + strings.ToLower(s)
	}
	if pl.remove {
		d.Changes = append(d.Changes, protocol.Change{Field: "remove", From: p.Name + " " + sum(m.Checksum), To: "absent"})
	}
	if pl.download {
		from := "absent"
		if m.ArchiveExists {
			from = strings.TrimSpace(p.Name + " " + sum(m.Checksum))
		}
		to := RedactURL(p.URL) + " -> " + p.Name
		if p.Checksum != "" {
			to += " " + sum(p.Checksum)
		}
		d.Changes = append(d.Changes, protocol.Change{Field: "download", From: from, To: to})
	}
	if pl.extract {
		what := "into " + p.ExtractParent
		if p.Creates != "" {
			what += fmt.Sprintf(" (creates %s)", p.Creates)
		}
		from := "not extracted"
		if m.CreatesExists {
			from = "extracted"
		}
		d.Changes = append(d.Changes, protocol.Change{Field: "extract", From: from, To: what})
	}
	if pl.cleanup && (pl.download || m.ArchiveExists) {
		d.Changes = append(d.Changes, protocol.Change{Field: "cleanup", From: p.Name, To: "absent"})
	}
	if !pl.remove && !p.Cleanup && m.ArchiveExists {
		if m.Owner != p.Owner {
			d.Changes = append(d.Changes, protocol.Change{Field: "owner", From: m.Owner, To: p.Owner})
		}
		if m.Group != p.Group {
			d.Changes = append(d.Changes, protocol.Change{Field: "group", From: m.Group, To: p.Group})
		}
	}
	return d
}
