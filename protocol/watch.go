package protocol

// History record headers of a run of an assignment whose watch-based
// repairs have failed (set on every later run of it while the agent runs):
// a failed repair never ends a watch, and these say that repairs fail.
const (
	// HeaderWatchFailures is how many watch repairs of the assignment
	// failed since its watch started on this host.
	HeaderWatchFailures = "Ccm-Watch-Failures"
	// HeaderWatchError is the latest failed repair's error (bounded; a
	// sensitive resource's message is not given).
	HeaderWatchError = "Ccm-Watch-Error"
	// HeaderWatchFailedAt is when the latest failed repair ended (RFC 3339,
	// UTC).
	HeaderWatchFailedAt = "Ccm-Watch-Failed-At"
)
