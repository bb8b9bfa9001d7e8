package agent

import (
	"context"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources"
)

// admission decides, stage by stage, what becomes of a fleet request
// before it runs. Each stage is a small interface in a file of its own:
//
//  1. authenticator (admit_auth.go): signature valid and signer trusted
//     (unauthenticated; in insecure mode an unsigned request passes),
//  2. decode (admit_decode.go): strict decode of the request and its body,
//     once (bad_request), the body's sender equal to the header signer
//     (unauthenticated), then its lifetime: created not ahead of the clock
//     by more than the skew (clock_skew) and created+ttl+skew not passed
//     (expired),
//  3. replay cache (admit_replay.go): request id not seen before
//     (duplicate, with the first reply's events),
//  4. the message's reply subject equal to the signed one
//     (unauthenticated), and the targets and filter including this host
//     (otherwise ignored),
//  5. authorizer (admit_policy.go): the body parsed (bad_request), no more
//     resources than an agent accounts for (too_large), and the signer's
//     policy allowing this host (its hosts scope), the request (noop_only)
//     and every resource as parsed (forbidden).
//
// No stage has a side effect but the replay cache's entry. The auditor
// (audit.go) writes every job's line: run before it runs, finish with its
// decision.
type admission struct {
	identity   string
	limits     protocol.Limits
	defaultTTL time.Duration
	skew       time.Duration

	auth   authenticator
	replay replayStore
	judge  authorizer
	audit  auditor

	types *resources.Registry
	facts func() *factSet
	now   func() time.Time
}

// verdict is what admission decided of a request.
type verdict int

const (
	// admitted: the request is to run.
	admitted verdict = iota
	// answered: the request is answered at once, without running (a
	// duplicate, or a request for other hosts: no reply).
	answered
	// refused: the request is refused with an error.
	refused
)

// admit runs the stages on r, received as m. It returns refused with the
// refusal, answered with the reply (nil: none), or admitted.
func (g *admission) admit(r *job, m *nats.Msg) (verdict, *protocol.FleetReply, *protocol.Error) {
	key, signed, e := g.authenticateMsg(r, m)
	if e != nil {
		return refused, nil, e
	}
	req, e, bodyErr := g.decode(r, m.Data, key, signed)
	if e == nil {
		e = g.lifetime(req)
	}
	if e != nil {
		return refused, nil, e
	}
	if reply, dup, e := g.replayed(r, req); e != nil || dup {
		return answerOrRefuse(reply, e)
	}
	if e := replySubject(r, req, m.Reply, signed); e != nil {
		return refused, nil, e
	}
	if !req.Targeted(g.identity) || (req.Filter != nil && !req.Filter.Match(g.facts().all)) {
		r.audit.Decision = DecisionNotTargeted
		return answered, nil, nil
	}
	if bodyErr != nil {
		return refused, nil, protocol.AsError(bodyErr)
	}
	if e := admitSize(r.body); e != nil {
		return refused, nil, e
	}
	if e := g.judge.authorize(req.ID, r.signer, r.body, req.Noop, g.facts().all, &r.audit); e != nil {
		return refused, nil, e
	}
	return admitted, nil, nil
}

// answerOrRefuse is refused with e, or answered with reply.
func answerOrRefuse(reply *protocol.FleetReply, e *protocol.Error) (verdict, *protocol.FleetReply, *protocol.Error) {
	if e != nil {
		return refused, nil, e
	}
	return answered, reply, nil
}

// replySubject checks that a request signed (or naming a reply subject) is
// answered where it says: re-sent to another inbox, it is not the signed
// request, and gets no record.
func replySubject(r *job, req *protocol.FleetRequest, msgReply string, signed bool) *protocol.Error {
	if (signed || req.Reply != "") && msgReply != req.Reply {
		r.record = false
		return protocol.NewError(protocol.CodeUnauthenticated, "the message's reply subject %.80q is not the signed reply subject %.80q", msgReply, req.Reply)
	}
	return nil
}

// onRequest admits a fleet request and queues it (busy when the queue is
// full), where run writes its audit line before it runs. Every outcome ends
// in finish, which writes the request's audit line with its decision.
func (a *Agent) onRequest(m *nats.Msg) {
	r := a.newFleetJob(m)
	v, reply, e := a.gate.admit(r, m)
	if v == refused {
		claimID(r, m.Data)
	}
	// Its id and signer are known (or claimed) from here: every line
	// about it names them.
	r.logAs(a.log)
	switch {
	case v == refused:
		r.log.Log(context.Background(), refusalLevel(e), "refused a request", "code", e.Code, "error", e.Message)
		a.fin.refuse(r, e)
	case v == answered:
		a.fin.finish(r, reply)
	case !a.queue.add(r):
		a.fin.refusef(r, protocol.CodeBusy, "%d requests are already waiting, or the agent is stopping", a.cfg.QueueLength)
	}
}

// onOverflow answers busy a request that found the backlog full, before
// its checks.
func (a *Agent) onOverflow(m *nats.Msg) {
	r := a.newFleetJob(m)
	claimID(r, m.Data)
	r.logAs(a.log)
	// Not authenticated: the signer is the one its header claims.
	r.log.Warn("refused a request: the backlog is full", nonEmpty([]any{"signer", m.Header.Get(protocol.HeaderSigner), "code", protocol.CodeBusy})...)
	a.fin.refusef(r, protocol.CodeBusy, "more than %d requests (%d bytes) wait for admission", maxBacklog, maxBacklogBytes)
}

// refusalLevel is the level of a refusal's log line: error when the
// agent failed (internal), warn when the request did.
func refusalLevel(e *protocol.Error) slog.Level {
	if e.Code == protocol.CodeInternal {
		return slog.LevelError
	}
	return slog.LevelWarn
}

// newFleetJob is the job of fleet request m, answered on m's reply
// subject, before its checks.
func (a *Agent) newFleetJob(m *nats.Msg) *job {
	r := &job{received: a.now(), respond: natsReply{nc: a.nc, keys: a.keys, subject: m.Reply}}
	r.audit = AuditRecord{Time: r.received.UTC(), Subject: m.Subject, Identity: a.cfg.Identity}
	return r
}

// claimID gives a request refused before it was decoded (its signature,
// or a full backlog) the id it claims in data (see looseID), so its
// refusal can still be matched; a request that was decoded has the id
// its decode read.
func claimID(r *job, data []byte) {
	if r.audit.RequestID == "" {
		r.audit.RequestID = looseID(data)
	}
}
