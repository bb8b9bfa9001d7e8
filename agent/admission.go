package agent

import (
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ccm-fleet/ccm/manifest"
	"github.com/ccm-fleet/ccm/protocol"
)

// admission is one received request on its way through the checks.
type admission struct {
	msg      *nats.Msg
	received time.Time
	audit    AuditRecord
	// signer is the trusted signer, nil for an unsigned request (insecure
	// mode) or a valid signature by a key the insecure policy does not list
	signer *Signer
	signed bool
	req    *protocol.FleetRequest
	// cached is whether the request id is in the replay cache (its final
	// reply is to be kept there)
	cached bool
}

// onRequest admits a fleet request. The checks run in this order, each
// refusing with its own code and none with a side effect:
//
//  1. signature valid and signer trusted (unauthenticated; in insecure
//     mode an unsigned request passes),
//  2. strict decode (bad_request), and the body's sender equal to the
//     header signer (unauthenticated),
//  3. created not ahead of the clock by more than the skew (clock_skew)
//     and created+ttl+skew not passed (expired),
//  4. request id not seen before (duplicate, with the first reply's
//     events),
//  5. the message's reply subject equal to the signed one
//     (unauthenticated),
//  6. targets and filter include this host (otherwise ignored),
//  7. the policy allows every resource (forbidden),
//
// then an audit line, then the queue (busy when full). Every received
// request gets one audit line with its decision.
func (a *Agent) onRequest(m *nats.Msg) {
	a.stats.received.Add(1)
	ad := &admission{msg: m, received: a.now()}
	ad.audit = AuditRecord{Time: ad.received.UTC(), Subject: m.Subject, Identity: a.cfg.Identity}

	// 1. signature and signer
	signer, sig := m.Header.Get(protocol.HeaderSigner), m.Header.Get(protocol.HeaderSignature)
	switch {
	case signer == "" && sig == "":
		if !a.insecure {
			a.refuse(ad, protocol.CodeUnauthenticated, "unsigned request: this agent runs only requests signed by a key its policy trusts")
			return
		}
	default:
		if err := protocol.Verify(m.Data, signer, sig); err != nil {
			a.refuse(ad, protocol.CodeUnauthenticated, fmt.Sprintf("signature of signer %.60s: %s", signer, err))
			return
		}
		ad.signed = true
		ad.audit.Signer.Key = signer
		s, ok := a.policy.signer(signer)
		switch {
		case ok:
			ad.signer = s
			ad.audit.Signer.Name = s.Name
		case !a.insecure:
			a.refuse(ad, protocol.CodeUnauthenticated, fmt.Sprintf("signer %s is not trusted by this agent's policy", signer))
			return
		}
	}

	// 2. strict decode
	req, err := protocol.DecodeFleetRequest(m.Data, protocol.Limits{MaxBytes: a.cfg.MaxRequestBytes})
	if err != nil {
		a.stats.badRequest.Add(1)
		a.log.Warn("refused a malformed request", "error", err)
		ad.audit.RequestID = looseID(m.Data)
		a.refuse(ad, protocol.CodeBadRequest, err.Error())
		return
	}
	ad.req = req
	ad.audit.RequestID = req.ID
	ad.audit.Resources = requestRefs(req)
	switch {
	case ad.signed && req.Sender != signer:
		a.refuse(ad, protocol.CodeUnauthenticated, fmt.Sprintf("field \"sender\" %.60q is not the signer %s", req.Sender, signer))
		return
	case !ad.signed && req.Sender != "":
		a.refuse(ad, protocol.CodeUnauthenticated, fmt.Sprintf("the request names sender %.60q but carries no signature", req.Sender))
		return
	}
	if req.TTL == 0 {
		req.TTL = protocol.Duration(a.cfg.DefaultTTL)
	}

	// 3. lifetime
	skew := a.policy.skew()
	now := a.now()
	switch {
	case req.Created.After(now.Add(skew)):
		a.refuseRecorded(ad, protocol.CodeClockSkew, fmt.Sprintf("request created at %s, %s ahead of this agent's clock (max_clock_skew %s)", req.Created.Format(time.RFC3339), req.Created.Sub(now).Round(time.Millisecond), skew))
		return
	case now.After(req.Deadline().Add(skew)):
		a.stats.expired.Add(1)
		a.refuseRecorded(ad, protocol.CodeExpired, fmt.Sprintf("request expired at %s (max_clock_skew %s)", req.Deadline().Format(time.RFC3339), skew))
		return
	}

	// 4. replay
	first, dup, err := a.replay.add(req.ID, req.Deadline().Add(skew), now)
	switch {
	case err != nil:
		a.log.Error("replay cache", "error", err)
		code := protocol.CodeInternal
		if errors.Is(err, ErrReplayFull) {
			code = protocol.CodeBusy
		}
		a.refuse(ad, code, err.Error())
		return
	case dup:
		a.duplicate(ad, first)
		return
	}
	ad.cached = true

	// 5. reply subject
	if (ad.signed || req.Reply != "") && m.Reply != req.Reply {
		a.refuse(ad, protocol.CodeUnauthenticated, fmt.Sprintf("the message's reply subject %.80q is not the signed reply subject %.80q", m.Reply, req.Reply))
		return
	}

	// 6. targets and filter
	if !req.Targeted(a.cfg.Identity) || (req.Filter != nil && !req.Filter.Match(a.currentFacts().all)) {
		a.stats.ignored.Add(1)
		a.metrics.request("ignored", "")
		ad.audit.Decision = DecisionNotTargeted
		a.writeAudit(&ad.audit)
		if err := a.replay.finish(req.ID, nil, true); err != nil {
			a.log.Error("replay cache", "error", err)
		}
		return
	}

	// 7. policy
	if ad.signer != nil {
		resources, err := requestResources(req)
		if err != nil {
			a.stats.badRequest.Add(1)
			a.refuseRecorded(ad, protocol.CodeBadRequest, err.Error())
			return
		}
		if msg, ok := ad.signer.allows(resources, req.Noop); !ok {
			a.refuseRecorded(ad, protocol.CodeForbidden, msg)
			return
		}
	}

	ad.audit.Decision = DecisionAccepted
	if err := a.audit.write(&ad.audit); err != nil {
		a.log.Error("not running a request: the audit log cannot be written", "request", req.ID, "error", err)
		a.refuseRecorded(ad, protocol.CodeInternal, "audit log unavailable")
		return
	}
	j := &job{req: req, reply: m.Reply, received: ad.received, audit: ad.audit}
	if !a.admit(j) {
		a.stats.busy.Add(1)
		a.refuseRecorded(ad, protocol.CodeBusy, fmt.Sprintf("%d requests are already waiting, or the agent is stopping", a.cfg.QueueLength))
	}
}

// refuse answers a request the agent will not run without recording the
// answer in history (the request is not trusted, or its id not known),
// and audits the refusal.
func (a *Agent) refuse(ad *admission, code protocol.Code, msg string) {
	a.metrics.request("error", code)
	if ad.audit.RequestID == "" {
		// Not decoded yet: the id it claims, to match the reply and the
		// audit line (it is not trusted).
		ad.audit.RequestID = looseID(ad.msg.Data)
	}
	ad.audit.Decision = string(code)
	ad.audit.Message = msg
	ad.audit.Result = &AuditResult{Error: protocol.NewError(code, "%s", msg)}
	a.writeAudit(&ad.audit)
	id := ad.audit.RequestID
	r := protocol.NewFleetReply(id, a.cfg.Identity, ad.received)
	r.Error = protocol.NewError(code, "%s", msg)
	data, _ := a.respond(ad.msg.Reply, r)
	a.keepFirst(ad, data)
}

// refuseRecorded answers an authenticated request the agent will not run,
// records the answer in history and audits the refusal.
func (a *Agent) refuseRecorded(ad *admission, code protocol.Code, msg string) {
	a.metrics.request("error", code)
	if ad.audit.Decision == "" || ad.audit.Decision == DecisionAccepted {
		ad.audit.Decision = string(code)
	}
	ad.audit.Message = msg
	ad.audit.Result = &AuditResult{Error: protocol.NewError(code, "%s", msg)}
	a.writeAudit(&ad.audit)
	r := protocol.NewFleetReply(ad.req.ID, a.cfg.Identity, ad.received)
	r.Error = protocol.NewError(code, "%s", msg)
	data, sig := a.encodeReply(r)
	a.keepFirst(ad, data)
	a.sendReply(ad.msg.Reply, ad.req.ID, data, sig)
	if data != nil {
		a.queueRecord(a.newRecord(r, data, sig, ad.received))
	}
}

// keepFirst keeps a refusal as the request's first reply in the replay
// cache, once the id is there.
func (a *Agent) keepFirst(ad *admission, data []byte) {
	if !ad.cached || data == nil {
		return
	}
	if err := a.replay.finish(ad.req.ID, data, false); err != nil {
		a.log.Error("replay cache", "error", err)
	}
}

// duplicate answers a request id seen before with the first reply's
// events, without running it again; a request this host was not asked is
// not answered.
func (a *Agent) duplicate(ad *admission, first replayEntry) {
	a.metrics.request("error", protocol.CodeDuplicate)
	ad.audit.Decision = string(protocol.CodeDuplicate)
	ad.audit.Message = fmt.Sprintf("request first received at %s", first.Seen.Format(time.RFC3339Nano))
	a.writeAudit(&ad.audit)
	if first.Ignored {
		return
	}
	r := protocol.NewFleetReply(ad.req.ID, a.cfg.Identity, ad.received)
	msg := fmt.Sprintf("request %s was already received at %s and is not run again", ad.req.ID, first.Seen.Format(time.RFC3339Nano))
	switch prev, err := protocol.DecodeFleetReply(first.Reply, protocol.Limits{MaxBytes: MaxReplayReplyBytes + 1}); {
	case len(first.Reply) == 0:
		msg += "; its result is not known here (still running, or too large to keep)"
	case err != nil:
		msg += "; its kept result is unreadable"
	default:
		r.Events = prev.Events
		if prev.Error != nil {
			msg += fmt.Sprintf("; it was answered %s: %s", prev.Error.Code, prev.Error.Message)
		}
	}
	r.Error = protocol.NewError(protocol.CodeDuplicate, "%s", msg)
	a.respond(ad.msg.Reply, r)
}

// writeAudit writes a line, logging a failure (the request is refused
// anyway).
func (a *Agent) writeAudit(rec *AuditRecord) {
	if err := a.audit.write(rec); err != nil {
		a.log.Error("could not write an audit line", "request", rec.RequestID, "decision", rec.Decision, "error", err)
	}
}

// requestRefs lists a request's resources as type#name for the audit log;
// a manifest that does not parse lists nothing.
func requestRefs(req *protocol.FleetRequest) []string {
	res, _ := requestResources(req)
	out := make([]string, len(res))
	for i, r := range res {
		out[i] = r.ref()
	}
	return out
}

// requestResources lists the resources a request asks for: its ensure
// resource, or every resource its manifest declares (parsed without
// unpacking any file).
func requestResources(req *protocol.FleetRequest) ([]policyResource, error) {
	if req.Ensure != nil {
		props, err := req.Ensure.PropertiesMap()
		if err != nil {
			return nil, err
		}
		r := policyResource{Type: req.Ensure.Type}
		r.Name, _ = props["name"].(string)
		if p, ok := props["provider"]; ok && p != nil {
			s, isString := p.(string)
			if !isString {
				s = "*"
			}
			r.Provider = s
		}
		return []policyResource{r}, nil
	}
	b, err := decodeBundle(req.Manifest)
	if err != nil {
		return nil, fmt.Errorf("manifest bundle: %w", err)
	}
	m, err := manifest.Parse(b.Manifest, manifest.ParseOptions{})
	if err != nil {
		return nil, fmt.Errorf("%s", manifestMessage(err))
	}
	declared, providers := m.Declared(), m.Providers()
	out := make([]policyResource, len(declared))
	for i, d := range declared {
		out[i] = policyResource{Type: d.Type, Name: d.Name, Provider: providers[i]}
	}
	return out, nil
}
