package scope

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/kballard/go-shellquote"

	"github.com/ccm-fleet/ccm/internal/urlscope"

	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/catalog"
)

// Decision is one judgement of a value against a signer's rules.
type Decision struct {
	// Allowed is the verdict.
	Allowed bool `json:"allowed"`
	// Check names what was judged: host, command, onlyif, unless,
	// post[N], environment, cwd, path, name, extract_parent, type,
	// provider, noop.
	Check string `json:"check"`
	// Value is the value judged, as resolved on the host.
	Value string `json:"value"`
	// Rule is the rule that decided, as written in the policy:
	// `exec.commands[0] "/usr/sbin/nginx -s reload"`, `deny.file.paths[0]
	// "/etc/nginx/ssl"`, `file.paths (no entry holds it: default deny)`.
	Rule string `json:"rule"`
	// Reason adds why, when the rule alone does not say it.
	Reason string `json:"reason,omitempty"`
}

// String is the decision on one line: `allowed command "/usr/sbin/nginx
// -s reload" by exec.commands[0] "/usr/sbin/nginx -s reload"`.
func (d Decision) String() string {
	verdict := "denied"
	if d.Allowed {
		verdict = "allowed"
	}
	s := fmt.Sprintf("%s %s %.200q by %s", verdict, d.Check, d.Value, d.Rule)
	if d.Reason != "" {
		s += ": " + d.Reason
	}
	return s
}

// Hosts decides whether a host with facts is within the scope: not
// matching every term of deny.hosts, and matching every term of hosts when
// it is set. Nil when the scope says nothing about hosts.
func (s *Scope) Hosts(facts map[string]any) *Decision {
	if s == nil || (s.allow.hosts == nil && s.deny.hosts == nil) {
		return nil
	}
	id, _ := facts["identity"].(string)
	d := &Decision{Check: "host", Value: id}
	switch {
	case s.deny.hosts != nil && s.deny.hosts.Match(facts):
		d.Rule = fmt.Sprintf("deny.hosts %q", s.deny.terms)
		d.Reason = "this host's facts match it"
	case s.allow.hosts == nil:
		d.Allowed, d.Rule = true, fmt.Sprintf("deny.hosts %q", s.deny.terms)
		d.Reason = "this host's facts do not match it"
	case s.allow.hosts.Match(facts):
		d.Allowed, d.Rule = true, fmt.Sprintf("hosts %q", s.allow.terms)
	default:
		d.Rule = fmt.Sprintf("hosts %q", s.allow.terms)
		d.Reason = "this host's facts do not match it"
	}
	return d
}

// Resource judges every host object the catalog declares for a resource
// (see catalog.Objects) that a scope restricts, as it will be used:
// provider is the exec provider that will run its commands (posix when
// ""), r.WorkingDir the directory its relative sources are joined to. It
// returns one decision per object judged, none when the scope restricts
// nothing the resource touches. A resource the catalog cannot describe is
// refused.
func (s *Scope) Resource(r Resolver, props resources.Properties, provider string) []Decision {
	if s == nil {
		// No scope restricts anything but the URLs fetched, which the
		// default refusals judge.
		s = &Scope{}
	}
	e, ok := catalog.ForProperties(props)
	if !ok {
		return []Decision{{Check: "type", Value: fmt.Sprintf("%T", props), Rule: "resource catalog", Reason: "the resource catalog does not hold this type: nothing it touches can be judged"}}
	}
	objs, err := catalog.Objects(e.Name, props, r.WorkingDir)
	if err != nil {
		return []Decision{{Check: "type", Value: e.Name, Rule: "resource catalog", Reason: err.Error()}}
	}
	r = r.judgement()
	var out []Decision
	for _, o := range objs {
		out = s.object(r, o, provider, out)
	}
	return out
}

// object judges one host object by the scope its kind belongs to.
func (s *Scope) object(r Resolver, o catalog.HostObject, provider string, out []Decision) []Decision {
	switch o.Kind {
	case catalog.PathWrite:
		return s.paths(r, o.Check, o.Value, o.Tree, out)
	case catalog.PathRead:
		return s.reads(r, o, out)
	case catalog.Command:
		if !s.execSet() {
			return out
		}
		switch o.Runner {
		case catalog.RunByProvider:
			return append(out, s.command(r, o.Check, o.Value, provider, o.Search, o.Placeholder))
		case catalog.RunShell:
			// Judged as what runs: sh, given the line.
			return append(out, s.command(r, o.Check, shellquote.Join(catalog.GossShell, "-c", o.Value), "posix", "", false))
		default:
			return append(out, s.command(r, o.Check, o.Value, "posix", o.Search, o.Placeholder))
		}
	case catalog.Environment, catalog.WorkingDir, catalog.SearchPath:
		if !s.execSet() {
			return out
		}
		return append(out, s.execValue(r, o))
	case catalog.Package:
		return s.names("package", s.allow.pkgs, s.deny.pkgs, o.Value, out)
	case catalog.Service:
		return s.names("service", s.allow.svcs, s.deny.svcs, o.Value, out)
	case catalog.UserName:
		return s.accountNames("user", s.allow.users, s.deny.users, o, out)
	case catalog.GroupName:
		return s.accountNames("group", s.allow.groups, s.deny.groups, o, out)
	case catalog.UID:
		return s.uid(o, out)
	case catalog.URL:
		return s.url(o, out)
	case catalog.Address:
		v := s.Fetch("").JudgeAddress(o.Value)
		return append(out, Decision{Allowed: v.Allowed, Check: o.Check, Value: o.Value, Rule: v.Rule, Reason: v.Reason})
	}
	return append(out, Decision{Check: o.Check, Value: o.Value, Rule: "resource catalog", Reason: fmt.Sprintf("a host object of kind %s cannot be judged", o.Kind)})
}

// url judges a URL the resource fetches by net.urls and deny.net.urls,
// or, without net.urls, by the default refusals (loopback, link-local,
// unspecified and metadata hosts). A file:// URL names a local directory,
// judged as the path read it is declared as too.
func (s *Scope) url(o catalog.HostObject, out []Decision) []Decision {
	if u, err := url.Parse(o.Value); err == nil && strings.EqualFold(u.Scheme, "file") {
		return out
	}
	v := s.Fetch("").Judge(o.Value)
	return append(out, Decision{Allowed: v.Allowed, Check: o.Check, Value: o.Value, Rule: v.Rule, Reason: v.Reason})
}

// Fetch is the guard that judges the URLs fetched under this scope, each
// redirect hop and each address dialled included; who names the signer
// in its refusals. A nil Scope has the default refusals.
func (s *Scope) Fetch(who string) *urlscope.Guard {
	g := &urlscope.Guard{Who: who}
	if s != nil {
		g.Allow, g.Deny = s.allow.urls, s.deny.urls
	}
	return g
}

// judge decides d by deny entries first, then, when the allow side is
// set, by its entries, none matching being a refusal.
func judge(d *Decision, set bool, rule string, allow, deny []entry, match func(entry) bool) {
	for _, e := range deny {
		if match(e) {
			d.Rule = e.String()
			return
		}
	}
	if !set {
		d.Allowed, d.Rule = true, rule+" (not restricted)"
		return
	}
	for _, e := range allow {
		if match(e) {
			d.Allowed, d.Rule = true, e.String()
			return
		}
	}
	if len(allow) == 0 {
		d.Rule = rule + " (lists nothing: not allowed with exec.commands set)"
		return
	}
	d.Rule = rule + " (no entry matches: default deny)"
}

// names judges a package or service name.
func (s *Scope) names(typ string, allow, deny []entry, name string, out []Decision) []Decision {
	if len(allow) == 0 && len(deny) == 0 {
		return out
	}
	d := Decision{Check: "name", Value: name}
	judge(&d, len(allow) > 0, typ+".names", allow, deny, func(e entry) bool { return globMatch(e.value, name) })
	return append(out, d)
}

// accountNames judges a user or group name as the property o.Check
// names it.
func (s *Scope) accountNames(typ string, allow, deny []entry, o catalog.HostObject, out []Decision) []Decision {
	if len(allow) == 0 && len(deny) == 0 {
		return out
	}
	d := Decision{Check: o.Check, Value: o.Value}
	judge(&d, len(allow) > 0, typ+".names", allow, deny, func(e entry) bool { return globMatch(e.value, o.Value) })
	return append(out, d)
}

// uid refuses uid 0 to every signer, whatever its scopes: a second root
// account is a way around every other rule. Other uids are not judged.
func (s *Scope) uid(o catalog.HostObject, out []Decision) []Decision {
	if o.Value != "0" {
		return out
	}
	return append(out, Decision{Check: o.Check, Value: o.Value, Rule: "user.uid",
		Reason: "no signer may give an account uid 0"})
}

// paths judges a path the resource writes: where it leads (its
// directories' links resolved, and its own when it is a link) must be
// inside a file.paths prefix and nowhere inside a deny.file.paths one,
// the prefixes' own links resolved as well. A tree (an archive's
// extract_parent, a scaffold's target) is a directory written below at
// will: a deny prefix below it refuses it too.
func (s *Scope) paths(r Resolver, check, p string, tree bool, out []Decision) []Decision {
	if len(s.allow.paths) == 0 && len(s.deny.paths) == 0 {
		return out
	}
	d := Decision{Check: check, Value: p, Rule: "file.paths"}
	parent, err1 := r.resolve(p, false)
	full, err2 := r.resolve(p, true)
	if err := firstErr(err1, err2); err != nil {
		d.Reason = err.Error()
		return append(out, d)
	}
	forms := []string{parent}
	if full != parent {
		forms = append(forms, full)
	}
	if parent != p || full != p {
		d.Value += fmt.Sprintf(" (leads to %s)", strings.Join(forms, ", "))
	}
	for _, e := range s.deny.paths {
		if r.holds(e, append([]string{p}, forms...)...) {
			d.Rule = e.String()
			return append(out, d)
		}
		if tree && r.below(e, append([]string{p}, forms...)...) {
			d.Rule = e.String()
			d.Reason = "it is below this " + check + ", where the resource may write anything"
			return append(out, d)
		}
	}
	if len(s.allow.paths) == 0 {
		d.Allowed, d.Rule = true, "file.paths (not restricted)"
		return append(out, d)
	}
	var by string
	for _, f := range forms {
		by = ""
		for _, e := range s.allow.paths {
			if r.holds(e, f) {
				by = e.String()
				break
			}
		}
		if by == "" {
			d.Rule = "file.paths (no prefix holds " + f + ": default deny)"
			return append(out, d)
		}
	}
	d.Allowed, d.Rule = true, by
	return append(out, d)
}

// below reports whether deny entry e (as written or resolved) is inside
// one of dirs.
func (r Resolver) below(e entry, dirs ...string) bool {
	rp, err := r.resolve(e.value, true)
	for _, d := range dirs {
		if within(e.value, d) || (err == nil && within(rp, d)) {
			return true
		}
	}
	return false
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
