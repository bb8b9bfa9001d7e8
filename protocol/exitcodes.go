package protocol

// ExitCode is the documented process exit status of ccm-orch and of
// ccm-agent's ensure and apply commands. Scripts rely on these numbers.
type ExitCode int

// Exit codes. When several hold, the precedence is 1, 2, 3, 5, 0.
const (
	// ExitOK: every expected host replied and nothing failed (under noop:
	// and nothing would change).
	ExitOK ExitCode = 0
	// ExitError: usage, validation, connection or internal error.
	ExitError ExitCode = 1
	// ExitFailed: at least one resource failed on at least one host.
	ExitFailed ExitCode = 2
	// ExitNoReply: at least one expected host did not reply (nothing failed).
	ExitNoReply ExitCode = 3
	// ExitNoMatch: no host matched the filter.
	ExitNoMatch ExitCode = 4
	// ExitDrift: noop only: something would change, nothing failed,
	// everyone replied.
	ExitDrift ExitCode = 5
	// ExitInterrupted: ccm-orch was interrupted (SIGINT, SIGTERM) while it
	// waited for replies; the hosts asked go on and record their results
	// in history. 128 + SIGINT, as shells report an interrupted command.
	ExitInterrupted ExitCode = 130
)

// EventsExitCode classifies a set of events from one host: ExitFailed when
// any failed, ExitDrift when noop and any would change, else ExitOK.
func EventsExitCode(noop bool, events ...*TransactionEvent) ExitCode {
	code := ExitOK
	for _, ev := range events {
		switch {
		case ev.Failed:
			return ExitFailed
		case noop && (ev.Changed || ev.Refreshed):
			code = ExitDrift
		}
	}
	return code
}
