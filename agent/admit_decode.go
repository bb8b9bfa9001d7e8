package agent

import (
	"cmp"
	"time"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/trust/policy"
)

// decode is admission's second stage: the request decoded strictly, once,
// with what it asks for (the body: a body that does not parse is refused
// only once this host knows it is asked, as hosts left out of a request do
// not answer it, so its error is returned apart), and its sender equal to
// key, the header signer.
func (g *admission) decode(r *job, data []byte, key string, signed bool) (req *protocol.FleetRequest, refusal *protocol.Error, bodyErr error) {
	req, claimed, err := protocol.DecodeFleetRequestClaim(data, g.limits)
	if err != nil {
		// The id the refusal is matched by is what this decode read; a
		// document refused before its id was read (its nesting or size,
		// checked first, or an id after the faulty key) is read once more,
		// loosely and bounded, for its id only: a requester must be able to
		// match the refusal, and the audit line to name the request.
		r.audit.RequestID = cmp.Or(claimed, looseID(data))
		return nil, protocol.AsError(err), nil
	}
	r.audit.RequestID = req.ID
	switch {
	case signed && req.Sender != key:
		return nil, protocol.NewError(protocol.CodeUnauthenticated, "field \"sender\" %.60q is not the signer %s", req.Sender, key), nil
	case !signed && req.Sender != "":
		return nil, protocol.NewError(protocol.CodeUnauthenticated, "the request names sender %.60q but carries no signature", req.Sender), nil
	}
	// Authenticated from here on: answers are recorded in history.
	r.record = true
	b, bodyErr := parseBody(req, g.types)
	if bodyErr == nil {
		r.body = b
		r.audit.Resources = b.refs()
	}
	if req.TTL == 0 {
		req.TTL = protocol.Duration(g.defaultTTL)
	}
	r.noop, r.deadline = req.Noop, req.Deadline()
	return req, nil, bodyErr
}

// lifetime refuses a request created ahead of the clock by more than the
// skew (clock_skew) or past its deadline plus the skew (expired).
func (g *admission) lifetime(req *protocol.FleetRequest) *protocol.Error {
	now := g.now()
	switch {
	case req.Created.After(now.Add(g.skew)):
		return protocol.NewError(protocol.CodeClockSkew, "request created at %s, %s ahead of this agent's clock (max_clock_skew %s)", req.Created.Format(time.RFC3339), req.Created.Sub(now).Round(time.Millisecond), g.skew)
	case now.After(req.Deadline().Add(g.skew)):
		return protocol.NewError(protocol.CodeExpired, "request expired at %s (max_clock_skew %s)", req.Deadline().Format(time.RFC3339), g.skew)
	}
	return nil
}

// parseBody decodes what a request asks for, once (policy.ParseBody: the
// same parse the offline policy check makes).
func parseBody(req *protocol.FleetRequest, types *resources.Registry) (*body, error) {
	return newBody(policy.ParseBody(req, types))
}

// parseManifest decodes an assignment's manifest bundle, once.
func parseManifest(raw []byte) (*body, error) {
	return newBody(policy.ParseManifest(raw))
}

// newBody is the agent's view of a parsed body.
func newBody(b *policy.Body, err error) (*body, error) {
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
