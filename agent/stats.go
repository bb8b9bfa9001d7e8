package agent

import "sync/atomic"

// Stats counts what an agent did with the requests it received.
type Stats struct {
	received, executed, ignored, expired, busy, badRequest atomic.Int64
}

// StatsSnapshot is a copy of the counters.
type StatsSnapshot struct {
	Received, Executed, Ignored, Expired, Busy, BadRequest int64
}

// Stats returns the agent's counters.
func (a *Agent) Stats() StatsSnapshot {
	s := &a.stats
	return StatsSnapshot{
		Received:   s.received.Load(),
		Executed:   s.executed.Load(),
		Ignored:    s.ignored.Load(),
		Expired:    s.expired.Load(),
		Busy:       s.busy.Load(),
		BadRequest: s.badRequest.Load(),
	}
}
