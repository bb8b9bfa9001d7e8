package protocol

// Runs of manifest sources: the continuous agent inside `ccm-agent run`
// applies CCM-style manifest sources (a local file, an obj:// or https://
// bundle) on its own schedule, and records each apply in history.
const (
	// DiscoverySource is the discovery source of a manifest source run's
	// history request: the agent applied one of its own sources.
	DiscoverySource = "source"
	// HeaderSource names the manifest source a history record ran
	// (/etc/ccm/site.yaml, obj://bucket/key).
	HeaderSource = "Ccm-Source"
)
