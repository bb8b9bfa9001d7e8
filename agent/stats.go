package agent

import (
	"sync/atomic"

	"github.com/ccm-fleet/ccm/protocol"
)

// Stats counts what an agent did with the requests it received.
type Stats struct {
	received, executed, ignored, expired, busy, badRequest        atomic.Int64
	recorded, spooled, historyDuplicates, notRecorded, heartbeats atomic.Int64
	dropped                                                       atomic.Int64
}

// StatsSnapshot is a copy of the counters.
type StatsSnapshot struct {
	Received, Executed, Ignored, Expired, Busy, BadRequest int64
	// Recorded counts replies written to the history stream (already
	// recorded ones included), Spooled those kept in the spool for later,
	// HistoryDuplicates those the stream already held.
	// NotRecorded counts replies not kept because the history stream does
	// not exist (or the record was too large for the server).
	Recorded, Spooled, HistoryDuplicates, NotRecorded int64
	// Heartbeats counts successful registry updates.
	Heartbeats int64
	// Dropped counts messages for this agent that NATS dropped because the
	// agent did not take them in time (a slow consumer): they got no
	// answer, and the requester reports the host as no reply.
	Dropped int64
}

// snapshot copies the counters.
func (s *Stats) snapshot() StatsSnapshot {
	return StatsSnapshot{
		Received:   s.received.Load(),
		Executed:   s.executed.Load(),
		Ignored:    s.ignored.Load(),
		Expired:    s.expired.Load(),
		Busy:       s.busy.Load(),
		BadRequest: s.badRequest.Load(),

		Recorded:          s.recorded.Load(),
		Spooled:           s.spooled.Load(),
		HistoryDuplicates: s.historyDuplicates.Load(),
		NotRecorded:       s.notRecorded.Load(),
		Heartbeats:        s.heartbeats.Load(),
		Dropped:           s.dropped.Load(),
	}
}

// refused counts a request answered with code.
func (s *Stats) refused(code protocol.Code) {
	switch code {
	case protocol.CodeExpired:
		s.expired.Add(1)
	case protocol.CodeBusy:
		s.busy.Add(1)
	case protocol.CodeBadRequest:
		s.badRequest.Add(1)
	}
}
