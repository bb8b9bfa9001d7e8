package agent

import (
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ccm-fleet/ccm/agent/policy"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/engine"
)

// onRequest admits a fleet request. The checks run in this order, each
// refusing with its own code and none with a side effect:
//
//  1. signature valid and signer trusted (unauthenticated; in insecure
//     mode an unsigned request passes),
//  2. strict decode of the request (bad_request) and its body, once, and
//     the body's sender equal to the header signer (unauthenticated),
//  3. created not ahead of the clock by more than the skew (clock_skew)
//     and created+ttl+skew not passed (expired),
//  4. request id not seen before (duplicate, with the first reply's
//     events),
//  5. the message's reply subject equal to the signed one
//     (unauthenticated),
//  6. targets and filter include this host (otherwise ignored),
//  7. the body parsed (bad_request), no more resources than an agent
//     accounts for (too_large), and the policy allows this host (the
//     signer's hosts scope), the request (noop_only) and every resource
//     as parsed (types, literal providers) (forbidden),
//
// then the queue (busy when full), where run writes its audit line before
// it runs. Every outcome ends in finish, which writes the request's audit
// line with its decision.
func (a *Agent) onRequest(m *nats.Msg) {
	r := a.newFleetJob(m)
	if e := a.admit(r, m); e != nil {
		claimID(r, m.Data)
		a.refuse(r, e)
	}
}

// newFleetJob is the job of fleet request m, answered on m's reply
// subject, before its checks.
func (a *Agent) newFleetJob(m *nats.Msg) *job {
	r := &job{received: a.now(), respond: natsReply{a: a, subject: m.Reply}}
	r.audit = AuditRecord{Time: r.received.UTC(), Subject: m.Subject, Identity: a.cfg.Identity}
	return r
}

// claimID gives a request that did not decode the id it claims in data
// (see looseID), so its refusal can still be matched.
func claimID(r *job, data []byte) {
	if r.audit.RequestID == "" {
		r.audit.RequestID = looseID(data)
	}
}

// admit runs the checks on r, received as m, and queues it; it returns
// the refusal when r is not to run, nil when r was queued or already
// answered (ignored, duplicate).
func (a *Agent) admit(r *job, m *nats.Msg) *protocol.Error {
	// 1. signature and signer
	signer, sig := m.Header.Get(protocol.HeaderSigner), m.Header.Get(protocol.HeaderSignature)
	s, signed, e := a.authenticate(m.Data, signer, sig)
	if signed {
		r.audit.Signer.Key = signer
	}
	if s != nil {
		r.signer = s
		r.audit.Signer.Name = s.Name
	}
	if e != nil {
		return e
	}

	// 2. strict decode, once: the request and what it asks for
	req, err := protocol.DecodeFleetRequest(m.Data, protocol.Limits{MaxBytes: a.cfg.MaxRequestBytes})
	if err != nil {
		a.log.Warn("refused a malformed request", "error", err)
		return protocol.AsError(err)
	}
	r.audit.RequestID = req.ID
	switch {
	case signed && req.Sender != signer:
		return protocol.NewError(protocol.CodeUnauthenticated, "field \"sender\" %.60q is not the signer %s", req.Sender, signer)
	case !signed && req.Sender != "":
		return protocol.NewError(protocol.CodeUnauthenticated, "the request names sender %.60q but carries no signature", req.Sender)
	}
	// Authenticated from here on: answers are recorded in history.
	r.record = true
	// A body that does not parse is refused once this host knows it is
	// asked (after 6), as hosts left out of a request do not answer it.
	b, bodyErr := parseBody(req, a.eng.Registry())
	if bodyErr == nil {
		r.body = b
		r.audit.Resources = b.refs()
	}
	if req.TTL == 0 {
		req.TTL = protocol.Duration(a.cfg.DefaultTTL)
	}
	r.noop, r.deadline = req.Noop, req.Deadline()

	// 3. lifetime
	skew := a.policy.Skew()
	now := a.now()
	switch {
	case req.Created.After(now.Add(skew)):
		return protocol.NewError(protocol.CodeClockSkew, "request created at %s, %s ahead of this agent's clock (max_clock_skew %s)", req.Created.Format(time.RFC3339), req.Created.Sub(now).Round(time.Millisecond), skew)
	case now.After(req.Deadline().Add(skew)):
		return protocol.NewError(protocol.CodeExpired, "request expired at %s (max_clock_skew %s)", req.Deadline().Format(time.RFC3339), skew)
	}

	// 4. replay
	first, dup, err := a.replay.addWith(req.ID, req.Deadline().Add(skew), now, newReplayWho(&r.audit))
	switch {
	case err != nil:
		a.log.Error("replay cache", "error", err)
		// The id is not ours: no record under it.
		r.record = false
		if errors.Is(err, ErrReplayFull) {
			return protocol.NewError(protocol.CodeBusy, "%s", err)
		}
		return protocol.NewError(protocol.CodeInternal, "%s", err)
	case dup:
		r.record = false
		a.finish(r, a.duplicateReply(r, first))
		return nil
	}
	r.cached = true

	// 5. reply subject
	if (signed || req.Reply != "") && m.Reply != req.Reply {
		// Re-sent to another inbox: not the signed request, no record.
		r.record = false
		return protocol.NewError(protocol.CodeUnauthenticated, "the message's reply subject %.80q is not the signed reply subject %.80q", m.Reply, req.Reply)
	}

	// 6. targets and filter
	if !req.Targeted(a.cfg.Identity) || (req.Filter != nil && !req.Filter.Match(a.currentFacts().all)) {
		r.audit.Decision = DecisionNotTargeted
		a.finish(r, nil)
		return nil
	}

	// 7. the body, and the policy on its resources as parsed; the engine
	// asks again about each one as it will run it (see guard)
	if bodyErr != nil {
		return protocol.AsError(bodyErr)
	}
	if e := admitSize(b); e != nil {
		return e
	}
	if e := a.authorize(req.ID, r.signer, b, req.Noop, &r.audit); e != nil {
		return e
	}
	if !a.enqueue(r) {
		return protocol.NewError(protocol.CodeBusy, "%d requests are already waiting, or the agent is stopping", a.cfg.QueueLength)
	}
	return nil
}

// authenticate checks a signed document, a request's or an assignment's:
// sig must be signerKey's signature of the exact bytes of data, and the
// policy must trust signerKey. signed is whether the signature is valid; s
// is the trusted signer, nil when there is none (an unsigned document, or
// an unlisted key, in insecure mode only: otherwise e refuses them).
func (a *Agent) authenticate(data []byte, signerKey, sig string) (s *Signer, signed bool, e *protocol.Error) {
	if signerKey == "" && sig == "" {
		if !a.insecure {
			return nil, false, protocol.NewError(protocol.CodeUnauthenticated, "unsigned request: this agent runs only requests signed by a key its policy trusts")
		}
		return nil, false, nil
	}
	if err := protocol.Verify(data, signerKey, sig); err != nil {
		return nil, false, protocol.NewError(protocol.CodeUnauthenticated, "signature of signer %.60s: %s", signerKey, err)
	}
	s, ok := a.policy.SignerByKey(signerKey)
	switch {
	case ok:
		return s, true, nil
	case !a.insecure:
		return nil, true, protocol.NewError(protocol.CodeUnauthenticated, "signer %s is not trusted by this agent's policy", signerKey)
	}
	return nil, true, nil
}

// authorize asks the signer's policy about the request (its hosts scope
// against this host's facts, noop_only) and every resource of b as parsed
// (types, literal providers): forbidden, with the rule and value in audit,
// when one is refused; nil s has no policy to ask (insecure mode). The
// engine asks again about each resource as it will run it (see guard).
func (a *Agent) authorize(id string, s *Signer, b *body, noop bool, audit *AuditRecord) *protocol.Error {
	if s == nil {
		return nil
	}
	if a.observePolicy != nil {
		for _, res := range b.resources {
			a.observePolicy(id, res)
		}
	}
	if e := a.authorizeHost(s, noop, a.currentFacts().all, audit); e != nil {
		return e
	}
	return a.authorizeResources(s, b, noop, audit)
}

// authorizeHost asks the signer's policy about the request as a whole on
// a host with facts: its hosts scope and noop_only (forbidden, with the
// rule and value in audit).
func (a *Agent) authorizeHost(s *Signer, noop bool, facts map[string]any, audit *AuditRecord) *protocol.Error {
	if d, refused := policy.FirstRefusal(s.CheckRequest(noop, facts)); refused {
		audit.Rule, audit.Value = d.Rule, d.Value
		return protocol.NewError(protocol.CodeForbidden, "%s", s.RefusalMessage("", d))
	}
	return nil
}

// authorizeResources asks the signer's policy about every resource of b
// as parsed (types, literal providers, noop_only).
func (a *Agent) authorizeResources(s *Signer, b *body, noop bool, audit *AuditRecord) *protocol.Error {
	if ref, ok := s.Allows(b.resources, noop); !ok {
		audit.Rule, audit.Value = ref.Rule, ref.Value
		return protocol.NewError(protocol.CodeForbidden, "%s", ref.Msg)
	}
	return nil
}

// parseBody decodes what a request asks for, once (policy.ParseBody: the
// same parse the offline policy check makes).
func parseBody(req *protocol.FleetRequest, types *resources.Registry) (*body, error) {
	b, err := policy.ParseBody(req, types)
	if err != nil {
		return nil, err
	}
	return &body{ensure: b.Ensure, bundle: b.Bundle, manifest: b.Manifest, resources: b.Resources}, nil
}

// refs lists the body's resources as type#name for the audit log.
func (b *body) refs() []string {
	out := make([]string, len(b.resources))
	for i, r := range b.resources {
		out[i] = r.Ref()
	}
	return out
}

// guard is the engine's check of each resource as it will run it
// (expanded, decoded, provider chosen) against the signer's policy: its
// type and provider, and its scopes (commands, paths, names); nil without
// a signer to check (insecure mode). A refusal names the rule and value in
// the request's audit line.
func (a *Agent) guard(r *job) func(p *engine.Prepared) error {
	if r.signer == nil {
		return nil
	}
	return func(p *engine.Prepared) error {
		if a.observePolicy != nil {
			a.observePolicy(r.id(), policyResource{Type: p.Type.Name(), Name: p.Name(), Provider: p.Provider()})
		}
		if d, refused := policy.FirstRefusal(r.signer.CheckResource(p, a.resolver)); refused {
			r.audit.Rule, r.audit.Value = d.Rule, d.Value
			return fmt.Errorf("%w: %s", resources.ErrForbidden, r.signer.RefusalMessage("", d))
		}
		return nil
	}
}

// writeAudit writes a line, logging a failure (the request is refused
// anyway).
func (a *Agent) writeAudit(rec *AuditRecord) {
	if err := a.audit.write(rec); err != nil {
		a.log.Error("could not write an audit line", "request", rec.RequestID, "decision", rec.Decision, "error", err)
	}
}
