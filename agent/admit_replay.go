package agent

import (
	"errors"
	"fmt"
	"time"

	"github.com/ccm-fleet/ccm/protocol"
)

// replayStore is admission's replay stage: the request ids an agent has
// seen, until they expire, with the first answer to each.
type replayStore interface {
	// addWith claims id until expires (now is the clock); dup is whether
	// it was seen before, first its entry then. An error means the id
	// could not be kept (ErrReplayFull: too many live ids).
	addWith(id string, expires, now time.Time, who *replayWho) (first replayEntry, dup bool, err error)
	// finish keeps the answer of id (nil: none yet, ignored: this host
	// was not asked).
	finish(id string, reply []byte, ignored bool) error
}

var _ replayStore = (*replayCache)(nil)

// replayed is the replay stage for req: a request id seen before is
// answered with the first reply (dup); a new one is claimed, r then owns
// its entry. An id that could not be claimed refuses r (busy when the
// cache is full), with no record under an id that is not r's.
func (g *admission) replayed(r *job, req *protocol.FleetRequest) (*protocol.FleetReply, bool, *protocol.Error) {
	first, dup, err := g.replay.addWith(req.ID, req.Deadline().Add(g.skew), g.now(), newReplayWho(&r.audit))
	switch {
	case err != nil:
		// Logged once, with the refusal (onRequest).
		r.record = false
		if errors.Is(err, ErrReplayFull) {
			return nil, false, protocol.Wrap(protocol.CodeBusy, err)
		}
		return nil, false, protocol.Wrap(protocol.CodeInternal, err)
	case dup:
		r.record = false
		return g.duplicateReply(r, first), true, nil
	}
	r.cached = true
	return nil, false, nil
}

// duplicateReply is the answer to a request id seen before: the first
// reply's events, without running it again; nil when this host was not
// asked the first time (it is not answered).
func (g *admission) duplicateReply(r *job, first replayEntry) *protocol.FleetReply {
	r.audit.Decision = string(protocol.CodeDuplicate)
	r.audit.Message = fmt.Sprintf("request first received at %s", first.Seen.Format(time.RFC3339Nano))
	if first.Ignored {
		return nil
	}
	reply := protocol.NewFleetReply(r.id(), g.identity, r.received)
	msg := fmt.Sprintf("request %s was already received at %s and is not run again", r.id(), first.Seen.Format(time.RFC3339Nano))
	switch prev, err := protocol.DecodeFleetReply(first.Reply, protocol.Limits{MaxBytes: MaxReplayReplyBytes + 1}); {
	case len(first.Reply) == 0:
		msg += "; its result is not known here (still running, or too large to keep)"
	case err != nil:
		msg += "; its kept result is unreadable"
	default:
		reply.Events = prev.Events
		if prev.Error != nil {
			msg += fmt.Sprintf("; it was answered %s: %s", prev.Error.Code, prev.Error.Message)
		}
	}
	reply.Error = protocol.NewError(protocol.CodeDuplicate, "%s", msg)
	return reply
}
