package servicetype

import (
	"strconv"

	"github.com/ccm-fleet/ccm/protocol"
)

// diffFor lists the service's changes as from → to: its running state
// ("state", a restart shown as running → restarted, the stop of a service
// on its way up as starting → stopped) and, when enable is
// managed, "enabled".
func diffFor(state *protocol.ServiceState, actions []action) *protocol.Diff {
	d := &protocol.Diff{}
	for _, a := range actions {
		from := state.Ensure
		if a.from != "" {
			from = a.from
		}
		switch a.verb {
		case "restart":
			d.Changes = append(d.Changes, protocol.Change{Field: "state", From: from, To: "restarted"})
		case "start":
			d.Changes = append(d.Changes, protocol.Change{Field: "state", From: from, To: EnsureRunning})
		case "stop":
			d.Changes = append(d.Changes, protocol.Change{Field: "state", From: from, To: EnsureStopped})
		case "enable", "disable":
			enabled := state.Metadata != nil && state.Metadata.Enabled
			d.Changes = append(d.Changes, protocol.Change{Field: "enabled", From: strconv.FormatBool(enabled), To: strconv.FormatBool(a.verb == "enable")})
		}
	}
	return d
}
