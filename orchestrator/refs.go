package orchestrator

import (
	"regexp"
	"strings"

	"github.com/ccm-fleet/ccm/protocol"
)

// DeclaredResource is a resource as a request names it, before the agents
// expand its templates: its type and its name (which may hold {{ ... }}
// templates).
type DeclaredResource struct {
	Type string
	Name string
}

// Ref is "type#name".
func (d DeclaredResource) Ref() string { return d.Type + "#" + d.Name }

// refPattern matches the names a declared resource takes on the hosts once
// its templates are expanded.
type refPattern struct {
	decl  DeclaredResource
	order int
	// re is nil for a name without templates, which must match exactly.
	re *regexp.Regexp
	// literal counts the name's characters outside templates: the more, the
	// more specific the pattern.
	literal int
}

// templateExpr finds the {{ ... }} templates in a name.
var templateExpr = regexp.MustCompile(`\{\{.*?\}\}`)

func newRefPattern(d DeclaredResource, order int) refPattern {
	p := refPattern{decl: d, order: order}
	locs := templateExpr.FindAllStringIndex(d.Name, -1)
	if len(locs) == 0 {
		p.literal = len(d.Name)
		return p
	}
	var b strings.Builder
	b.WriteString(`^(?s)`)
	last := 0
	for _, l := range locs {
		b.WriteString(regexp.QuoteMeta(d.Name[last:l[0]]))
		b.WriteString(`.*`)
		p.literal += l[0] - last
		last = l[1]
	}
	b.WriteString(regexp.QuoteMeta(d.Name[last:]))
	b.WriteString(`$`)
	p.literal += len(d.Name) - last
	p.re = regexp.MustCompile(b.String())
	return p
}

func (p *refPattern) match(typ, name string) bool {
	if p.decl.Type != typ {
		return false
	}
	if p.re == nil {
		return p.decl.Name == name
	}
	return p.re.MatchString(name)
}

// refNamer names the resource of each event in a reply as the request
// declared it, so hosts whose resource names differ only by template
// expansion are grouped together, and orders resources as declared.
type refNamer struct {
	// single is an ensure request's ref: the resource of a one-event reply
	// of the same type.
	single   string
	patterns []refPattern
	cache    map[string]namedRef
}

// namedRef is an event's declared ref and the position of its declaration;
// resources no declaration matches come after every declared one.
type namedRef struct {
	ref   string
	order int
}

// ensureRefs names the resource of an ensure request; "" when it has none.
func ensureRefs(ref string) *refNamer { return &refNamer{single: ref} }

// manifestRefs names the resources of a manifest by its declarations.
func manifestRefs(decl []DeclaredResource) *refNamer {
	n := &refNamer{cache: map[string]namedRef{}}
	for i, d := range decl {
		n.patterns = append(n.patterns, newRefPattern(d, i))
	}
	return n
}

// name returns the declared ref of ev, one of the events of a reply
// (single: its only event). An exact declaration wins; otherwise the
// matching template with the most literal text, then the first declared;
// otherwise the event's own ref.
func (n *refNamer) name(ev *protocol.TransactionEvent, single bool) namedRef {
	own := ev.ResourceID()
	if n == nil {
		return namedRef{ref: own}
	}
	if n.cache == nil { // an ensure request
		if single && n.single != "" && strings.HasPrefix(n.single, ev.Type+"#") {
			return namedRef{ref: n.single}
		}
		return namedRef{ref: own, order: 1}
	}
	if r, ok := n.cache[own]; ok {
		return r
	}
	best := -1
	for i := range n.patterns {
		p := &n.patterns[i]
		if !p.match(ev.Type, ev.Name) {
			continue
		}
		if p.re == nil {
			best = i
			break
		}
		if best < 0 || p.literal > n.patterns[best].literal {
			best = i
		}
	}
	r := namedRef{ref: own, order: len(n.patterns)}
	if best >= 0 {
		r = namedRef{ref: n.patterns[best].decl.Ref(), order: n.patterns[best].order}
	}
	if len(n.cache) < maxRefCache {
		n.cache[own] = r
	}
	return r
}

// maxRefCache bounds the names a refNamer remembers.
const maxRefCache = 1 << 16
