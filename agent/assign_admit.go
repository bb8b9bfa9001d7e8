package agent

import (
	"hash/fnv"
	"reflect"
	"time"

	"github.com/ccm-fleet/ccm/jsstore"
	"github.com/ccm-fleet/ccm/protocol"
)

// admit checks a stored assignment the way a fleet request is checked:
// the signature and the signer's trust (authenticate), a strict decode,
// the sender equal to the signer; then that it may replace what this
// agent runs of the name (signed after the high-water mark, by the owner
// or an assignments administrator: supersedes); then the manifest parsed
// and the policy on every resource (authorize). signed and decodeErr are
// the stored form as decoded. The hosts scope is judged apart (rejudge),
// as it changes with the host's facts.
func (s *assigner) admit(name string, revision uint64, digest string, signed *protocol.SignedAssignment, decodeErr error) *assigned {
	a := s.a
	as := &assigned{name: name, revision: revision, digest: digest}
	limits := protocol.Limits{MaxBytes: jsstore.MaxAssignmentValueSize + 1}
	if decodeErr != nil {
		as.refusal = protocol.AsError(decodeErr)
		return as
	}
	as.signerKey = signed.Signer
	if signed.Signer == "" {
		as.refusal = protocol.NewError(protocol.CodeUnauthenticated, "assignment %s is not signed: assignments are run only when signed by a key the policy trusts", name)
		return as
	}
	signer, _, e := a.gate.auth.authenticate(signed.Assignment, signed.Signer, signed.Signature)
	as.signer = signer
	spec, err := protocol.DecodeAssignment(signed.Assignment, limits)
	if err == nil {
		as.spec = spec
	}
	switch {
	case e != nil:
		as.refusal = e
		return as
	case err != nil:
		as.refusal = protocol.AsError(err)
		return as
	case spec.Name != name:
		as.refusal = protocol.NewError(protocol.CodeBadRequest, "assignment stored as %q names itself %q", name, spec.Name)
		return as
	case spec.Sender != signed.Signer:
		as.refusal = protocol.NewError(protocol.CodeUnauthenticated, "field \"sender\" %.60q is not the signer %s", spec.Sender, signed.Signer)
		return as
	}
	if as.refusal = s.mayReplace(name, "revision", revision, digest, spec.Created, signed.Signer, signer, &as.audit); as.refusal != nil {
		return as
	}
	as.supersedes = true
	b, e := s.assignedBody(spec)
	if as.refusal = e; e != nil {
		return as
	}
	as.body = b
	if as.refusal = admitSize(b); as.refusal != nil {
		return as
	}
	id := runID(name, revision)
	if signer != nil {
		if as.refusal = a.gate.judge.resources(id, signer, b, spec.Noop, &as.audit); as.refusal != nil {
			return as
		}
	}
	if b.vouch != nil {
		as.refusal = a.gate.judge.resources(id, b.vouch, b, spec.Noop, &as.audit)
	}
	return as
}

// assignedBody is what spec runs: its inline manifest, or the object
// store bundle it names (see bundleBody).
func (s *assigner) assignedBody(spec *protocol.Assignment) (*body, *protocol.Error) {
	if spec.Bundle != nil {
		return s.bundleBody(spec.Bundle)
	}
	b, err := parseManifest(spec.Manifest)
	if err != nil {
		return nil, protocol.AsError(err)
	}
	return b, nil
}

// after is when an assignment that ran at last runs next: an interval
// later plus this host's splay offset.
func (s *assigner) after(as *assigned, last time.Time) time.Time {
	return last.Add(time.Duration(as.spec.Interval) + s.offset(as))
}

// offset is this host's fixed share of the assignment's splay, the same
// after a restart.
func (s *assigner) offset(as *assigned) time.Duration {
	sp := time.Duration(as.spec.Splay)
	if sp <= 0 {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(s.a.cfg.Identity + "/" + as.name))
	return time.Duration(h.Sum64() % uint64(sp))
}

// reselect applies a change of facts: assignments that now select this
// host run at once, as do the selected ones (once more, with the new
// facts); ones that no longer select it stop.
func (s *assigner) reselect() {
	facts := s.a.facts.current().all
	if reflect.DeepEqual(facts, s.facts) {
		return
	}
	s.facts = facts
	now := s.a.now()
	for _, as := range s.known {
		if as.spec == nil {
			continue
		}
		was := as.selected
		as.selected = as.spec.Selects(s.a.cfg.Identity, facts)
		if !as.selected {
			// Judged again when it selects this host again.
			as.outOfScope = nil
		}
		switch {
		case as.refusal != nil:
			if as.selected && !was {
				s.recordRefusalOnce(as)
			}
		case as.selected:
			if s.rejudge(as) {
				as.next, as.trigger = now, protocol.TriggerFacts
			}
		case was:
			s.a.log.Info("assignment no longer selects this host", "assignment", as.name)
			as.next = time.Time{}
			s.unwatch(as)
		}
	}
}
