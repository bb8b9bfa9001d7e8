package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/ccm-fleet/ccm/manifest"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/catalog"
	"github.com/ccm-fleet/ccm/resources/engine"
	"github.com/ccm-fleet/ccm/resources/templates"
	"github.com/ccm-fleet/ccm/trust/scope"
)

// ErrCheck is wrapped by every error of CheckOffline that is not about the
// policy: an unknown signer, a request or manifest that does not parse or
// prepare (an agent would answer bad_request).
var ErrCheck = errors.New("policy check")

// OfflineCheck is one request judged against a policy without an agent
// or a broker, as ccm-orch policy check does.
type OfflineCheck struct {
	// Signer is the signer's name (or public key).
	Signer string
	// Facts are the facts of the host the request would reach; templates,
	// conditions and the hosts scope see them.
	Facts map[string]any
	// Noop judges the request as a dry run; a fleet request's own noop
	// field counts too.
	Noop bool
	// Request is a fleet request (io.choria.ccm.v1.fleet.request, with an
	// ensure or manifest body) or an ensure request
	// (io.choria.ccm.v1.resource.ensure.request), JSON or YAML. Leave it
	// empty to judge Manifest.
	Request []byte
	// Manifest is a manifest to judge instead of Request.
	Manifest *manifest.Manifest
	// Resolver finds commands and paths; they are looked up on the host
	// running the check.
	Resolver scope.Resolver
}

// CheckedDecision is one decision and what it is about: "request" for the
// request as a whole, else the resource as type#name.
type CheckedDecision struct {
	Subject string `json:"subject"`
	scope.Decision
}

// String is the decision on one line, its subject first.
func (c CheckedDecision) String() string { return c.Subject + ": " + c.Decision.String() }

// CheckReport is what CheckOffline decided.
type CheckReport struct {
	// Signer is the signer judged.
	Signer string `json:"signer"`
	// Targeted is false when a fleet request's targets or filter leave
	// the host out: an agent would ignore it, and nothing else is judged.
	Targeted bool `json:"targeted"`
	// Decisions are in the order an agent makes them.
	Decisions []CheckedDecision `json:"decisions"`
}

// Allowed reports whether an agent would run the request: targeted and no
// decision refused.
func (r *CheckReport) Allowed() bool {
	if !r.Targeted {
		return false
	}
	for _, d := range r.Decisions {
		if !d.Allowed {
			return false
		}
	}
	return true
}

// CheckOffline judges a request or manifest for one signer of p the way
// an agent with these facts would: the request (noop_only, hosts), each
// resource as parsed (types, literal providers), then each resource as it
// would run (templates expanded over the facts, properties decoded and
// validated, provider chosen as by name, commands and paths resolved on
// this host), every decision kept rather than stopping at the first
// refusal. Nothing is applied and no provider is run.
func (p *Policy) CheckOffline(ctx context.Context, c OfflineCheck) (*CheckReport, error) {
	s, err := p.checkedSigner(c.Signer)
	if err != nil {
		return nil, err
	}
	rep := &CheckReport{Signer: s.Name, Targeted: true}
	facts := c.Facts
	if facts == nil {
		facts = map[string]any{}
	}
	reg := inertRegistry()
	var (
		b    *Body
		noop = c.Noop
	)
	switch {
	case len(c.Request) > 0:
		req, err := decodeCheckRequest(c.Request)
		if err != nil {
			return nil, err
		}
		noop = noop || req.Noop
		if id, _ := facts["identity"].(string); !req.Targeted(id) || (req.Filter != nil && !req.Filter.Match(facts)) {
			rep.Targeted = false
			return rep, nil
		}
		if b, err = ParseBody(req, reg); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrCheck, protocol.Plain(err))
		}
	case c.Manifest != nil:
		b = manifestBody(c.Manifest)
	default:
		return nil, fmt.Errorf("%w: give a request or a manifest", ErrCheck)
	}
	rep.add("request", s.CheckRequest(noop, facts)...)
	for _, r := range b.Resources {
		if ref, ok := s.AllowsResource(r); !ok {
			rep.add(r.Ref(), scope.Decision{Check: "as sent", Value: ref.Value, Rule: ref.Rule, Reason: ref.Msg})
		}
	}
	guard := func(pr *engine.Prepared) error {
		rep.add(pr.Ref(), s.CheckResource(pr, c.Resolver)...)
		return nil
	}
	if err := prepareInert(ctx, engine.New(reg, engine.WithScopedGoss(nil)), b, facts, guard); err != nil {
		return nil, err
	}
	return rep, nil
}

// add keeps decisions about subject.
func (r *CheckReport) add(subject string, ds ...scope.Decision) {
	for _, d := range ds {
		r.Decisions = append(r.Decisions, CheckedDecision{Subject: subject, Decision: d})
	}
}

// checkedSigner is the signer a check names; an error lists the policy's
// signers when it has none of that name or key.
func (p *Policy) checkedSigner(name string) (*Signer, error) {
	if s := p.signerNamed(name); s != nil {
		return s, nil
	}
	names := make([]string, len(p.Signers))
	for i, x := range p.Signers {
		names[i] = x.Name
	}
	return nil, fmt.Errorf("%w: no signer %q in the policy (signers: %s)", ErrCheck, name, strings.Join(names, ", "))
}

// manifestBody is the body of a request carrying manifest m, its
// resources as declared with their literal providers.
func manifestBody(m *manifest.Manifest) *Body {
	b := &Body{Manifest: m}
	declared, providers := m.Declared(), m.Providers()
	for i, d := range declared {
		b.Resources = append(b.Resources, Resource{Type: d.Type, Name: d.Name, Provider: providers[i]})
	}
	return b
}

// prepareInert takes body b through eng as a dry run over facts, guard
// seeing each resource as it would run: an ensure body is prepared, a
// manifest (its bundle written to a temporary directory first) is run on
// eng's inert providers.
func prepareInert(ctx context.Context, eng *engine.Engine, b *Body, facts map[string]any, guard func(*engine.Prepared) error) error {
	if b.Ensure != nil {
		sess := eng.NewSession(engine.RunOptions{Noop: true, Env: templates.New(facts, nil), Guard: guard})
		if _, err := sess.Prepare(*b.Ensure); err != nil {
			return fmt.Errorf("%w: %w", ErrCheck, err)
		}
		return nil
	}
	m := b.Manifest
	if b.Bundle != nil {
		dir, err := os.MkdirTemp("", ManifestTempPattern)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrCheck, err)
		}
		defer os.RemoveAll(dir)
		if err := b.Bundle.WriteFiles(dir); err != nil {
			return fmt.Errorf("%w: %s", ErrCheck, ManifestMessage(err))
		}
		m = m.InDir(dir)
	}
	// The providers are inert: "applying" fails each resource at once,
	// touching nothing; only the guard's decisions are kept.
	if _, err := manifest.Run(ctx, eng, m, manifest.RunOptions{Noop: true, Facts: facts, Guard: guard}); err != nil {
		return fmt.Errorf("%w: %s", ErrCheck, ManifestMessage(err))
	}
	return nil
}

// signerNamed returns the signer with this name or public key.
func (p *Policy) signerNamed(name string) *Signer {
	for i := range p.Signers {
		if p.Signers[i].Name == name || p.Signers[i].PublicKey == name {
			return &p.Signers[i]
		}
	}
	return nil
}

// decodeCheckRequest decodes a fleet request, or an ensure request as the
// ensure body of one.
func decodeCheckRequest(data []byte) (*protocol.FleetRequest, error) {
	limits := protocol.Limits{}
	j, err := protocol.YAMLToJSON(data, limits)
	if err != nil {
		return nil, fmt.Errorf("%w: request: %w", ErrCheck, protocol.Plain(err))
	}
	var probe struct {
		Protocol string `json:"protocol"`
	}
	_ = json.Unmarshal(j, &probe)
	switch probe.Protocol {
	case protocol.FleetRequestProtocol:
		req, err := protocol.DecodeFleetRequest(data, limits)
		if err != nil {
			return nil, fmt.Errorf("%w: request: %w", ErrCheck, protocol.Plain(err))
		}
		return req, nil
	case protocol.EnsureRequestProtocol:
		er, _, err := protocol.DecodeEnsureRequest(data, limits)
		if err != nil {
			return nil, fmt.Errorf("%w: request: %w", ErrCheck, protocol.Plain(err))
		}
		return &protocol.FleetRequest{Protocol: protocol.FleetRequestProtocol, Ensure: er}, nil
	default:
		return nil, fmt.Errorf("%w: request: field \"protocol\" must be %q or %q, got %q", ErrCheck, protocol.FleetRequestProtocol, protocol.EnsureRequestProtocol, probe.Protocol)
	}
}

// inertRegistry has the built-in types, and providers of the built-in
// names that never act: a check chooses providers the way an agent does
// by name (exec: posix unless shell is named) without running any.
func inertRegistry() *resources.Registry {
	reg := resources.NewRegistry()
	for _, t := range manifest.BuiltinTypes() {
		_ = reg.RegisterType(t)
	}
	for typ, names := range manifest.BuiltinProviders() {
		for _, n := range names {
			_ = reg.RegisterProvider(inertFactory{typ: typ, name: n})
		}
	}
	return reg
}

// errInert is what an inert provider answers to being used.
var errInert = errors.New("not applied: policy check")

// inertFactory is a provider factory that can manage anything and builds
// nothing.
type inertFactory struct{ typ, name string }

func (f inertFactory) Type() string { return f.typ }
func (f inertFactory) Name() string { return f.name }
func (f inertFactory) IsManageable(map[string]any, resources.Properties) (bool, int, error) {
	return true, 1, nil
}
func (f inertFactory) New() (resources.Provider, error) { return nil, errInert }

// ExplicitOnly keeps the exec shell provider to resources that name it,
// as the real one.
func (f inertFactory) ExplicitOnly() bool { return catalog.NeedsShell(f.typ, f.name) }
