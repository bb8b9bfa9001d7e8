package policy

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/ccm-fleet/ccm/internal/urlscope"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources/catalog"
	"github.com/ccm-fleet/ccm/resources/engine"
	"github.com/ccm-fleet/ccm/trust/scope"
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
// (templates expanded, properties decoded, provider chosen): its type;
// then, for the commands the resource catalog declares for it, that a
// resource of another type runs commands only with exec allowed (scaffold
// post commands, health checks, goss command rules) and that commands run
// by an exec provider other than posix, or by goss's sh -c, need shell; then every host object a scope of the
// signer restricts, commands and paths resolved by r (relative sources
// against the resource's working directory). It returns a decision per
// value judged; the first not Allowed is the refusal.
func (s *Signer) CheckResource(p *engine.Prepared, r scope.Resolver) []scope.Decision {
	typ := p.Type.Name()
	allow := "allow [" + strings.Join(s.Allow, ", ") + "]"
	d := scope.Decision{Check: "type", Value: typ, Rule: allow, Allowed: slices.Contains(s.Allow, typ)}
	out := []scope.Decision{d}
	if !d.Allowed {
		return out
	}
	provider := p.Provider()
	if provider == "" {
		provider = p.Properties.Common().Provider
	}
	objs, err := catalog.Objects(typ, p.Properties, p.WorkingDir)
	if err != nil {
		return append(out, scope.Decision{Check: "type", Value: typ, Rule: "resource catalog", Reason: err.Error()})
	}
	shellJudged := false
	for _, o := range objs {
		if o.Kind != catalog.Command {
			continue
		}
		switch {
		case o.Runner == catalog.RunDirect && !slices.Contains(s.Allow, protocol.TypeExec):
			// Commands of a type other than exec: the signer must be
			// allowed to run commands at all.
			family, _, _ := strings.Cut(o.Check, "[")
			return append(out, scope.Decision{Check: family, Value: o.Value, Rule: allow,
				Reason: fmt.Sprintf("%s are commands: they need exec in allow", commandWords(typ, family))})
		case o.Runner == catalog.RunShell && !slices.Contains(s.Allow, protocol.TypeExec):
			return append(out, scope.Decision{Check: o.Check, Value: o.Value, Rule: allow,
				Reason: "goss command rules are commands: they need exec in allow"})
		case o.Runner == catalog.RunShell && !shellJudged:
			shellJudged = true
			d := scope.Decision{Check: o.Check, Value: o.Value, Rule: "shell: " + strconv.FormatBool(s.Shell), Allowed: s.Shell}
			if !d.Allowed {
				d.Reason = "goss runs command rules with sh -c"
				return append(out, d)
			}
			out = append(out, d)
		case o.Runner == catalog.RunByProvider && provider != "" && provider != "posix" && !shellJudged:
			shellJudged = true
			d := scope.Decision{Check: "provider", Value: provider, Rule: "shell: " + strconv.FormatBool(s.Shell), Allowed: s.Shell}
			if !d.Allowed {
				d.Reason = "only the posix provider runs commands without a shell"
				return append(out, d)
			}
			out = append(out, d)
		}
	}
	r.WorkingDir = p.WorkingDir
	return append(out, s.scope.Resource(r, p.Properties, provider)...)
}

// FetchGuard is the guard that judges what the signer's resources fetch
// as they run: each URL, redirect hop and address dialled, by its
// net.urls and deny.net.urls, or the default refusals without them.
// CheckResource judges the URLs a resource declares by the same rules.
func (s *Signer) FetchGuard() *urlscope.Guard { return s.scope.Fetch("signer " + s.Name) }

// Arm judges one resource as CheckResource does and, when every decision
// allows it, sets the guard of what it fetches as it runs (FetchGuard).
// It returns the decisions.
func (s *Signer) Arm(p *engine.Prepared, r scope.Resolver) []scope.Decision {
	ds := s.CheckResource(p, r)
	if _, refused := FirstRefusal(ds); !refused {
		p.Fetch = append(p.Fetch, s.FetchGuard())
	}
	return ds
}

// commandWords names the commands a property holds, for messages:
// "health checks", "scaffold post commands".
func commandWords(typ, family string) string {
	if family == "health_checks" {
		return "health checks"
	}
	return typ + " " + strings.ReplaceAll(family, "_", " ") + " commands"
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
