package policy

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/ccm-fleet/ccm/agent/scope"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources/engine"
	"github.com/ccm-fleet/ccm/resources/scaffoldtype"
)

// CheckRequest judges what a request asks of signer s as a whole on a
// host with facts: noop_only (noop says whether the request is a dry
// run), then the hosts scope. A refusal is a decision not Allowed.
func (s *Signer) CheckRequest(noop bool, facts map[string]any) []scope.Decision {
	var out []scope.Decision
	if s.NoopOnly {
		d := scope.Decision{Check: "noop", Value: strconv.FormatBool(noop), Rule: "noop_only: true", Allowed: noop}
		if !noop {
			d.Reason = "this signer may only send noop requests"
		}
		out = append(out, d)
	}
	if d := s.scope.Hosts(facts); d != nil {
		out = append(out, *d)
	}
	return out
}

// CheckResource judges one resource as the engine will run it
// (templates expanded, properties decoded, provider chosen): its type,
// the shell provider, scaffold post commands and health checks (they count
// as exec), then
// every value a scope of the signer restricts, commands and paths
// resolved by r. It returns a decision per value judged; the first not
// Allowed is the refusal.
func (s *Signer) CheckResource(p *engine.Prepared, r scope.Resolver) []scope.Decision {
	typ := p.Type.Name()
	d := scope.Decision{Check: "type", Value: typ, Rule: "allow [" + strings.Join(s.Allow, ", ") + "]", Allowed: slices.Contains(s.Allow, typ)}
	out := []scope.Decision{d}
	if !d.Allowed {
		return out
	}
	provider := p.Provider()
	if provider == "" {
		provider = p.Properties.Common().Provider
	}
	switch props := p.Properties.(type) {
	case *scaffoldtype.Properties:
		if len(props.Post) > 0 {
			d := scope.Decision{Check: "post", Value: fmt.Sprintf("%d post commands", len(props.Post)), Rule: "allow [" + strings.Join(s.Allow, ", ") + "]", Allowed: slices.Contains(s.Allow, protocol.TypeExec)}
			if !d.Allowed {
				d.Reason = "scaffold post commands are commands: they need exec in allow"
				return append(out, d)
			}
			out = append(out, d)
		}
	}
	if hcs := p.Properties.Common().HealthChecks; len(hcs) > 0 {
		d := scope.Decision{Check: "health_checks", Value: hcs[0].Command, Rule: "allow [" + strings.Join(s.Allow, ", ") + "]", Allowed: slices.Contains(s.Allow, protocol.TypeExec)}
		if !d.Allowed {
			d.Reason = "health checks are commands: they need exec in allow"
			return append(out, d)
		}
		out = append(out, d)
	}
	if typ == protocol.TypeExec && provider != "" && provider != "posix" {
		d := scope.Decision{Check: "provider", Value: provider, Rule: "shell: " + strconv.FormatBool(s.Shell), Allowed: s.Shell}
		if !d.Allowed {
			d.Reason = "only the posix provider runs commands without a shell"
			return append(out, d)
		}
		out = append(out, d)
	}
	r.WorkingDir = p.WorkingDir
	return append(out, s.scope.Resource(r, p.Properties, provider)...)
}

// FirstRefusal returns the first decision of ds that is not allowed.
func FirstRefusal(ds []scope.Decision) (scope.Decision, bool) {
	for _, d := range ds {
		if !d.Allowed {
			return d, true
		}
	}
	return scope.Decision{}, false
}

// RefusalMessage words a refusal for the reply and the audit line:
// `file#/etc/shadow: signer web: denied name "/etc/shadow" by file.paths
// (no prefix holds /etc/shadow: default deny)`.
func (s *Signer) RefusalMessage(ref string, d scope.Decision) string {
	if ref == "" {
		return fmt.Sprintf("signer %s: %s", s.Name, d)
	}
	return fmt.Sprintf("%s: signer %s: %s", ref, s.Name, d)
}
