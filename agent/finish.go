package agent

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources/redact"
)

// finisher answers jobs: every outcome of every job (refused, ignored,
// duplicate, run) goes through finish, the one place that encodes, signs,
// keeps, audits, counts, sends and records an answer.
type finisher struct {
	identity string
	keys     *protocol.KeySigner
	replay   replayStore
	audit    auditor
	history  *history
	// stats and metrics count requests here only (see count)
	stats   *Stats
	metrics *Metrics
	log     *slog.Logger
	now     func() time.Time
}

// refuse answers r with a request-level error and the audit decision code.
func (f *finisher) refuse(r *job, e *protocol.Error) {
	r.audit.Decision = string(e.Code)
	r.audit.Message = e.Message
	reply := protocol.NewFleetReply(r.id(), f.identity, r.received)
	reply.Error = e
	f.finish(r, reply)
}

// refusef is refuse with a message built from format.
func (f *finisher) refusef(r *job, code protocol.Code, format string, args ...any) {
	f.refuse(r, protocol.NewError(code, format, args...))
}

// finish answers a request, in one fixed order whatever the outcome:
//
//  1. redact, encode and sign the reply (reply nil: the request is not
//     answered, as when this host was not asked); the one encoding is
//     what the reply, the replay cache and history carry,
//  2. keep it in the replay cache, when r owns the entry, so a replay sent
//     on seeing the reply finds it,
//  3. write the audit line (its decision, and the result when answered),
//  4. count it in the stats and metrics,
//  5. hand it to the job's responder (the requester's reply subject, or
//     nobody for a run the agent started itself),
//  6. record it in history, when r is authenticated, with the
//     responder's marks.
//
// Whoever sees the reply finds it in the replay cache, the audit log and
// the metrics.
func (f *finisher) finish(r *job, reply *protocol.FleetReply) {
	id := r.id()
	var data []byte
	var sig string
	if reply != nil {
		redact.Reply(reply)
		reply.CapDiffs(protocol.MaxReplyDiffBytes)
		data, sig = f.encodeReply(r.log, reply)
		forbiddenAtRun(&r.audit, reply.Error)
	}
	if r.cached {
		if err := f.replay.finish(id, data, r.audit.Decision == DecisionNotTargeted); err != nil {
			r.log.Error("replay cache", "error", err)
		}
	}
	r.audit.Time = f.now().UTC()
	if reply != nil {
		r.audit.Result = newAuditResult(reply)
	}
	f.writeAudit(r.log, &r.audit)
	f.count(r, reply)
	if reply != nil {
		r.respond.respond(r, data, sig)
	}
	if r.record && data != nil {
		rec := f.history.newRecord(reply, data, sig, r.received)
		r.respond.mark(rec.header)
		f.history.add(rec)
	}
}

// count adds a finished job to the stats and the metrics by its outcome:
// the one place where requests are counted (Received counts the fleet
// requests, answered on NATS).
func (f *finisher) count(r *job, reply *protocol.FleetReply) {
	if _, fleet := r.respond.(natsReply); fleet {
		f.stats.received.Add(1)
	}
	switch {
	case r.audit.Decision == DecisionNotTargeted:
		f.stats.ignored.Add(1)
		f.metrics.request("ignored", "")
	case reply != nil && reply.Error != nil:
		f.stats.refused(reply.Error.Code)
		f.metrics.request("error", reply.Error.Code)
	case r.audit.Decision == DecisionAccepted:
		f.stats.executed.Add(1)
		f.metrics.request("executed", "")
		f.metrics.finished(reply.Duration, reply.Events)
	default:
		f.metrics.request("error", protocol.Code(r.audit.Decision))
	}
	if run, ok := r.respond.(*assignmentRun); ok && reply != nil {
		f.metrics.assignmentRan(run.name, reply, f.now())
	}
}

// recordInterrupted answers, in history, the replay cache and the audit
// log, each request a previous run of the agent received but never
// answered (it crashed or was killed while the request was queued or
// running): its result is "interrupted", and a replay of the request is
// answered with that.
func (f *finisher) recordInterrupted(entries []replayEntry) {
	for _, e := range entries {
		msg := fmt.Sprintf("the agent stopped before this request finished (received at %s): it may have run in part, or not at all", e.Seen.Format(time.RFC3339Nano))
		r := &job{
			received: e.Seen,
			cached:   true,
			record:   true,
			audit:    AuditRecord{RequestID: e.ID, Identity: f.identity},
			respond:  historyOnly{},
		}
		if e.Who != nil {
			r.audit.Subject, r.audit.Signer, r.audit.Resources = e.Who.Subject, e.Who.Signer, e.Who.Resources
		}
		r.logAs(f.log)
		r.log.Warn("a request was interrupted by the agent stopping", "received", e.Seen)
		f.refuse(r, protocol.NewError(protocol.CodeInterrupted, "%s", msg))
	}
}

// encodeReply encodes and signs r, logging to log (its job's); nil when
// it cannot be encoded.
func (f *finisher) encodeReply(log *slog.Logger, r *protocol.FleetReply) (data []byte, sig string) {
	b, what, err := shrinkReply(r, protocol.MaxWholeBytes)
	if what != "" {
		log.Warn("a reply was too large to keep whole", "limit", protocol.MaxWholeBytes, "shrunk", what)
	}
	if err != nil {
		log.Error("could not encode a reply", "error", err)
		return nil, ""
	}
	return b, f.keys.Sign(b)
}

// writeAudit writes a line, logging a failure to log, its job's (the
// request is refused anyway).
func (f *finisher) writeAudit(log *slog.Logger, rec *AuditRecord) {
	if err := f.audit.write(rec); err != nil {
		log.Error("could not write an audit line", "decision", rec.Decision, "error", err)
	}
}

// recordLog is base naming the request and signer of rec, for a line
// about an audit record written without a job (an assignment's removal).
func recordLog(base *slog.Logger, rec *AuditRecord) *slog.Logger {
	return base.With(nonEmpty([]any{"request", rec.RequestID, "signer", rec.Signer.Key})...)
}
