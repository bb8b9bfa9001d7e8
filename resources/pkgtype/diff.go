package pkgtype

import "github.com/ccm-fleet/ccm/protocol"

// diffFor says how the package goes from the version found (an installed
// version, or "absent") to the one wanted: the plan's version, "latest", or
// "absent" for an uninstall. After a real change, to is what Status found.
func diffFor(from string, pl plan, ensure, after string) *protocol.Diff {
	to := after
	if to == "" {
		switch {
		case pl.action == actionUninstall:
			to = EnsureAbsent
		case pl.version != "" && pl.version != EnsurePresent:
			to = pl.version
		default:
			to = ensure
		}
	}
	if from == to {
		return nil
	}
	return &protocol.Diff{Changes: []protocol.Change{{Field: "version", From: from, To: to}}}
}
