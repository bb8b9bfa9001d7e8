package agent

import (
	"fmt"
	"time"

	"github.com/ccm-fleet/ccm/manifest"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/redact"
	"github.com/ccm-fleet/ccm/resources/engine"
)

// job is one piece of work on its way from admission to its answer: a
// fleet request, a scheduled assignment run or a watch repair. It holds
// what to run (the body, parsed once), who asked (the signer, and the
// audit line naming them) and how to answer (its responder). It owns that
// answer: whatever the outcome (refused, ignored, duplicate, run), it ends
// in finish, exactly once.
type job struct {
	received time.Time
	audit    AuditRecord
	// noop and deadline are how to run it: a dry run, and when it expires
	noop     bool
	deadline time.Time
	// signer is the trusted signer, nil for an unsigned request (insecure
	// mode) or a valid signature by a key the insecure policy does not list
	signer *Signer
	// body is what the job asks for, parsed once: what the policy checks,
	// the audit line names and the engine runs
	body *body
	// cached is whether this job owns its id's replay cache entry (its
	// answer is kept there)
	cached bool
	// record is whether its answer goes to history: the request decoded and
	// its sender is authenticated
	record bool
	// respond answers it
	respond responder
}

// body is a request's resources, parsed once at admission.
type body struct {
	// ensure is the resource of an ensure request, nil for a manifest
	ensure *engine.Spec
	// bundle and manifest are a manifest request's, parsed without
	// writing any file
	bundle   *manifest.Bundle
	manifest *manifest.Manifest
	// resources are the declared resources as the policy sees them, in
	// order (names as written, before templates)
	resources []policyResource
}

// id is the job's request id: the decoded one, or, for a request that did
// not decode, the one it claims (untrusted, to match the reply and audit
// line); see claimID.
func (j *job) id() string { return j.audit.RequestID }

// refuse answers r with a request-level error and the audit decision code.
func (a *Agent) refuse(r *job, e *protocol.Error) {
	r.audit.Decision = string(e.Code)
	r.audit.Message = e.Message
	reply := protocol.NewFleetReply(r.id(), a.cfg.Identity, r.received)
	reply.Error = e
	a.finish(r, reply)
}

// refusef is refuse with a message built from format.
func (a *Agent) refusef(r *job, code protocol.Code, format string, args ...any) {
	a.refuse(r, protocol.NewError(code, format, args...))
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
func (a *Agent) finish(r *job, reply *protocol.FleetReply) {
	id := r.id()
	var data []byte
	var sig string
	if reply != nil {
		redact.Reply(reply)
		reply.CapDiffs(protocol.MaxReplyDiffBytes)
		data, sig = a.encodeReply(reply)
		r.audit.forbiddenAtRun(reply.Error)
	}
	if r.cached {
		if err := a.replay.finish(id, data, r.audit.Decision == DecisionNotTargeted); err != nil {
			a.log.Error("replay cache", "request", id, "error", err)
		}
	}
	r.audit.Time = a.now().UTC()
	if reply != nil {
		r.audit.Result = newAuditResult(reply)
	}
	a.writeAudit(&r.audit)
	a.count(r, reply)
	if reply != nil {
		r.respond.respond(id, data, sig)
	}
	if r.record && data != nil {
		rec := a.history.newRecord(reply, data, sig, r.received)
		r.respond.mark(rec.header)
		a.history.add(rec)
	}
}

// count adds a finished job to the stats and the metrics by its outcome:
// the one place where requests are counted (Received counts the fleet
// requests, answered on NATS).
func (a *Agent) count(r *job, reply *protocol.FleetReply) {
	if _, fleet := r.respond.(natsReply); fleet {
		a.stats.received.Add(1)
	}
	switch {
	case r.audit.Decision == DecisionNotTargeted:
		a.stats.ignored.Add(1)
		a.metrics.request("ignored", "")
	case reply != nil && reply.Error != nil:
		a.stats.refused(reply.Error.Code)
		a.metrics.request("error", reply.Error.Code)
	case r.audit.Decision == DecisionAccepted:
		a.stats.executed.Add(1)
		a.metrics.request("executed", "")
		a.metrics.finished(reply.Duration, reply.Events)
	default:
		a.metrics.request("error", protocol.Code(r.audit.Decision))
	}
}

// duplicateReply is the answer to a request id seen before: the first
// reply's events, without running it again; nil when this host was not
// asked the first time (it is not answered).
func (a *Agent) duplicateReply(r *job, first replayEntry) *protocol.FleetReply {
	r.audit.Decision = string(protocol.CodeDuplicate)
	r.audit.Message = fmt.Sprintf("request first received at %s", first.Seen.Format(time.RFC3339Nano))
	if first.Ignored {
		return nil
	}
	reply := protocol.NewFleetReply(r.id(), a.cfg.Identity, r.received)
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

// recordInterrupted answers, in history, the replay cache and the audit
// log, each request a previous run of the agent received but never
// answered (it crashed or was killed while the request was queued or
// running): its result is "interrupted", and a replay of the request is
// answered with that.
func (a *Agent) recordInterrupted() {
	for _, e := range a.replay.takeInterrupted() {
		msg := fmt.Sprintf("the agent stopped before this request finished (received at %s): it may have run in part, or not at all", e.Seen.Format(time.RFC3339Nano))
		a.log.Warn("a request was interrupted by the agent stopping", "request", e.ID, "received", e.Seen)
		r := &job{
			received: e.Seen,
			cached:   true,
			record:   true,
			audit:    AuditRecord{RequestID: e.ID, Identity: a.cfg.Identity},
			respond:  historyOnly{},
		}
		if e.Who != nil {
			r.audit.Subject, r.audit.Signer, r.audit.Resources = e.Who.Subject, e.Who.Signer, e.Who.Resources
		}
		a.refuse(r, protocol.NewError(protocol.CodeInterrupted, "%s", msg))
	}
}
