package agent

import (
	"fmt"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/engine"
	"github.com/ccm-fleet/ccm/trust/policy"
	"github.com/ccm-fleet/ccm/trust/scope"
)

// authorizer is admission's last stage, and the engine's check as a job
// runs: the signer's policy on the host, the request and each resource. A
// refusal is forbidden and names the rule and value in the audit line; a
// nil signer has no policy to ask (insecure mode).
type authorizer interface {
	// authorize asks about a request with body b: the host (see host)
	// and every resource as parsed (types, literal providers).
	authorize(id string, s *Signer, b *body, noop bool, facts map[string]any, audit *AuditRecord) *protocol.Error
	// host asks about the request as a whole on a host with facts: the
	// signer's hosts scope and noop_only.
	host(s *Signer, noop bool, facts map[string]any, audit *AuditRecord) *protocol.Error
	// resources asks about every resource of b as parsed.
	resources(id string, s *Signer, b *body, noop bool, audit *AuditRecord) *protocol.Error
	// guard is the engine's check of each resource of r as it will run
	// it (expanded, decoded, provider chosen): type, provider, scopes;
	// nil without a signer.
	guard(r *job) func(p *engine.Prepared) error
}

// policyJudge asks the signers' policies, resolving commands and paths as
// they will run.
type policyJudge struct {
	resolver scope.Resolver
	// observe, when set (tests only), sees every resource the policy is
	// asked about, at admission and as the engine will run it
	observe func(requestID string, r policyResource)
}

var _ authorizer = (*policyJudge)(nil)

func (p *policyJudge) authorize(id string, s *Signer, b *body, noop bool, facts map[string]any, audit *AuditRecord) *protocol.Error {
	if s == nil {
		return nil
	}
	if e := p.host(s, noop, facts, audit); e != nil {
		p.observeAll(id, b)
		return e
	}
	return p.resources(id, s, b, noop, audit)
}

func (p *policyJudge) host(s *Signer, noop bool, facts map[string]any, audit *AuditRecord) *protocol.Error {
	if s == nil {
		return nil
	}
	if d, refused := policy.FirstRefusal(s.CheckRequest(noop, facts)); refused {
		audit.Rule, audit.Value = d.Rule, d.Value
		return protocol.NewError(protocol.CodeForbidden, "%s", s.RefusalMessage("", d))
	}
	return nil
}

func (p *policyJudge) resources(id string, s *Signer, b *body, noop bool, audit *AuditRecord) *protocol.Error {
	if s == nil {
		return nil
	}
	p.observeAll(id, b)
	if ref, ok := s.Allows(b.resources, noop); !ok {
		audit.Rule, audit.Value = ref.Rule, ref.Value
		return protocol.NewError(protocol.CodeForbidden, "%s", ref.Msg)
	}
	return nil
}

// observeAll hands every resource of b to observe.
func (p *policyJudge) observeAll(id string, b *body) {
	if p.observe == nil {
		return
	}
	for _, res := range b.resources {
		p.observe(id, res)
	}
}

func (p *policyJudge) guard(r *job) func(*engine.Prepared) error {
	signers := make([]*Signer, 0, 2)
	if r.signer != nil {
		signers = append(signers, r.signer)
	}
	if r.body != nil && r.body.vouch != nil {
		// An object store bundle's signer judges its resources too.
		signers = append(signers, r.body.vouch)
	}
	if len(signers) == 0 {
		return nil
	}
	return func(pr *engine.Prepared) error {
		if p.observe != nil {
			p.observe(r.id(), policyResource{Type: pr.Type.Name(), Name: pr.Name(), Provider: pr.Provider()})
		}
		for _, s := range signers {
			if d, refused := policy.FirstRefusal(s.Arm(pr, p.resolver)); refused {
				r.audit.Rule, r.audit.Value = d.Rule, d.Value
				return fmt.Errorf("%w: %s", resources.ErrForbidden, s.RefusalMessage("", d))
			}
		}
		return nil
	}
}
