package scope

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ccm-fleet/ccm/internal/urlscope"
	"github.com/ccm-fleet/ccm/protocol"
)

// compiled is one side of a Scope, each part nil when not set.
type compiled struct {
	side    string
	hosts   *protocol.Filter
	terms   []string
	cmds    []pattern
	env     []entry
	cwd     []entry
	path    []entry
	paths   []entry
	reads   []entry
	pkgs    []entry
	svcs    []entry
	users   []entry
	groups  []entry
	urls    []urlscope.Prefix
	hasExec bool
}

// entry is one string rule with where it is written.
type entry struct {
	rule  string // e.g. file.paths[0]
	value string // cleaned
	raw   string // as written
}

func (e entry) String() string { return fmt.Sprintf("%s %q", e.rule, e.raw) }

// Compile checks allow and deny (either may be nil) for a signer allowed
// the resource types in types, and compiles them. Errors wrap ErrRule and
// name the rule as written: `exec.commands[1] "bash **": the executable
// must be an absolute path`, `file.paths[0] "/etc/nginx/": every path it
// allows is denied by deny.file.paths[0] "/etc"`.
func Compile(allow, deny *Rules, types []string, opts ...Option) (*Scope, error) {
	s := &Scope{}
	for _, o := range opts {
		o(s)
	}
	if !allow.Set() && !deny.Set() && !s.noopOnly {
		return nil, nil
	}
	var err error
	if s.allow, err = compileSide("", allow, types, true); err != nil {
		return nil, err
	}
	if s.deny, err = compileSide("deny.", deny, types, false); err != nil {
		return nil, err
	}
	if err := s.shadows(); err != nil {
		return nil, err
	}
	return s, nil
}

// compileSide checks and compiles one side; prefix is "" or "deny.". A
// rule for a type outside types can never apply and is refused; allow
// says whether this is the allow side (exec then needs its commands).
func compileSide(prefix string, r *Rules, types []string, allow bool) (compiled, error) {
	c := compiled{side: prefix}
	if r == nil {
		return c, nil
	}
	if err := c.compileHosts(r.Hosts); err != nil {
		return c, err
	}
	if err := c.compileExec(r.Exec, types, allow); err != nil {
		return c, err
	}
	if err := c.compileFile(r.File, types); err != nil {
		return c, err
	}
	if err := c.compileNames("package", r.Package, types, &c.pkgs); err != nil {
		return c, err
	}
	if err := c.compileNames("service", r.Service, types, &c.svcs); err != nil {
		return c, err
	}
	// Both account types name users and groups (members, groups joined).
	if err := c.compileNames("user", r.User, types, &c.users, "user", "group"); err != nil {
		return c, err
	}
	if err := c.compileNames("group", r.Group, types, &c.groups, "user", "group"); err != nil {
		return c, err
	}
	return c, c.compileNet(r.Net)
}

// compileNet compiles the network scope when set: URL prefixes. It
// applies to a signer allowed any type: besides the types that fetch URLs,
// the goss http and addr rules of any resource's health checks fetch and
// dial.
func (c *compiled) compileNet(n *Net) error {
	if n == nil {
		return nil
	}
	if len(n.URLs) == 0 {
		return bad("%snet: empty; give urls (or leave net out)", c.side)
	}
	rule := c.side + "net.urls"
	if len(n.URLs) > MaxEntries {
		return bad("%s: %d entries, at most %d", rule, len(n.URLs), MaxEntries)
	}
	for i, raw := range n.URLs {
		where := fmt.Sprintf("%s[%d]", rule, i)
		if len(raw) > MaxEntryBytes {
			return bad("%s: longer than %d bytes", where, MaxEntryBytes)
		}
		p, err := urlscope.ParsePrefix(where, raw)
		if err != nil {
			return bad("%s %.80q: %s", where, raw, err)
		}
		for _, q := range c.urls {
			if q.Same(p) {
				return bad("%s %.80q: the same as %s, so it can never decide anything", where, raw, q.Rule)
			}
		}
		c.urls = append(c.urls, p)
	}
	return nil
}

// needs refuses the rule what of this side unless the signer is allowed
// (types) one of the types in appliesTo, those the rule applies to.
func (c *compiled) needs(types []string, what string, appliesTo ...string) error {
	for _, t := range appliesTo {
		if slices.Contains(types, t) {
			return nil
		}
	}
	return bad("%s%s: the signer is not allowed %s, so the rule can never apply", c.side, what, strings.Join(appliesTo, " or "))
}

// compileHosts parses the hosts entries, when set: --where terms and
// "select: EXPR" entries (see protocol.ParseSelect), all ANDed into one
// filter, judged by the code that judges a request's filter.
func (c *compiled) compileHosts(hosts []string) error {
	if hosts == nil {
		return nil
	}
	if len(hosts) == 0 {
		return bad("%shosts: empty; leave it out to allow every host", c.side)
	}
	var where, sels []string
	for i, h := range hosts {
		expr, ok := SelectEntry(h)
		if !ok {
			where = append(where, h)
			continue
		}
		s, err := protocol.ParseSelect(expr)
		if err != nil {
			return bad("%shosts[%d] %.80q: select: %s", c.side, i, h, protocol.AsError(err).Message)
		}
		sels = append(sels, s.String())
	}
	f, err := protocol.ParseFilter(where)
	if err != nil {
		return bad("%shosts: %s", c.side, protocol.AsError(err).Message)
	}
	switch len(sels) {
	case 0:
	case 1:
		f.Select = sels[0]
	default:
		f.Select = "(" + strings.Join(sels, ") and (") + ")"
	}
	if err := f.Compile(); err != nil {
		return bad("%shosts: its select entries together: %s", c.side, protocol.AsError(err).Message)
	}
	// The entries as judged, in the order written.
	c.terms = make([]string, 0, len(hosts))
	w, s := 0, 0
	for _, h := range hosts {
		if _, ok := SelectEntry(h); ok {
			c.terms = append(c.terms, selectPrefix+" "+sels[s])
			s++
			continue
		}
		c.terms = append(c.terms, f.Where[w].String())
		w++
	}
	c.hosts = f
	return noDuplicates(c.side+"hosts", c.terms)
}

// selectPrefix starts a hosts entry that is a select expression.
const selectPrefix = "select:"

// SelectEntry returns the expression of a hosts entry written
// "select: EXPR" (ok false for a --where term, which cannot start so: ':'
// is not a fact name character).
func SelectEntry(entry string) (expr string, ok bool) {
	expr, ok = strings.CutPrefix(strings.TrimSpace(entry), selectPrefix)
	return strings.TrimSpace(expr), ok
}

// compileExec compiles the exec scope when set. On the allow side,
// environment, cwd and path only narrow commands, so commands are
// required.
func (c *compiled) compileExec(e *Exec, types []string, allow bool) error {
	if e == nil {
		return nil
	}
	if err := c.needs(types, "exec", "exec"); err != nil {
		return err
	}
	if len(e.Commands) == 0 && len(e.Environment) == 0 && len(e.Cwd) == 0 && len(e.Path) == 0 {
		return bad("%sexec: empty; give commands (or leave exec out)", c.side)
	}
	if allow && len(e.Commands) == 0 {
		return bad("exec: environment, cwd and path restrict commands: list the commands too (exec.commands)")
	}
	c.hasExec = len(e.Commands) > 0
	var err error
	if c.cmds, err = compilePatterns(c.side+"exec.commands", e.Commands); err != nil {
		return err
	}
	if c.env, err = compileList(c.side+"exec.environment", e.Environment, checkEnv); err != nil {
		return err
	}
	if c.cwd, err = compileList(c.side+"exec.cwd", e.Cwd, checkDir); err != nil {
		return err
	}
	c.path, err = compileList(c.side+"exec.path", e.Path, checkSearchPath)
	return err
}

// compileFile compiles the file scope when set: the paths written and
// the paths read, each left out or listing at least one prefix.
func (c *compiled) compileFile(f *Files, types []string) error {
	if f == nil {
		return nil
	}
	if err := c.needs(types, "file", "file", "archive", "scaffold", "exec", "user", "group"); err != nil {
		return err
	}
	if len(f.Paths) == 0 && len(f.ReadPaths) == 0 {
		return bad("%sfile: empty; give paths or read_paths (or leave file out)", c.side)
	}
	if f.Paths != nil && len(f.Paths) == 0 {
		return bad("%sfile.paths: empty; leave it out", c.side)
	}
	if f.ReadPaths != nil && len(f.ReadPaths) == 0 {
		return bad("%sfile.read_paths: empty; leave it out", c.side)
	}
	var err error
	if c.paths, err = compileList(c.side+"file.paths", f.Paths, checkDir); err != nil {
		return err
	}
	c.reads, err = compileList(c.side+"file.read_paths", f.ReadPaths, checkDir)
	return err
}

// compileNames compiles the package or service scope (typ) into out when
// set.
func (c *compiled) compileNames(typ string, names *Names, types []string, out *[]entry, appliesTo ...string) error {
	if names == nil {
		return nil
	}
	if len(appliesTo) == 0 {
		appliesTo = []string{typ}
	}
	if err := c.needs(types, typ, appliesTo...); err != nil {
		return err
	}
	if len(names.Names) == 0 {
		return bad("%s%s: empty; give names (or leave %s out)", c.side, typ, typ)
	}
	var err error
	*out, err = compileList(c.side+typ+".names", names.Names, checkGlob)
	return err
}

// shadows refuses allow entries that deny entries fully cover, and a
// deny.hosts that refuses every host hosts allows.
func (s *Scope) shadows() error {
	a, d := &s.allow, &s.deny
	if d.hosts != nil && a.hosts != nil && subset(d.terms, a.terms) {
		return bad("hosts %q: every host it allows is refused by deny.hosts %q", a.terms, d.terms)
	}
	for _, p := range a.cmds {
		for _, q := range d.cmds {
			if q.covers(p) {
				return bad("%s %q: every command it allows is denied by %s %q", p.rule, p.raw, q.rule, q.raw)
			}
		}
	}
	for _, au := range a.urls {
		for _, du := range d.urls {
			if du.Covers(au) {
				return bad("%s: everything it allows is denied by %s", au, du)
			}
		}
	}
	for _, l := range []struct {
		allow, deny []entry
		covers      func(deny, allow string) bool
	}{
		{a.paths, d.paths, func(d, a string) bool { return within(a, d) }},
		{a.reads, d.reads, func(d, a string) bool { return within(a, d) }},
		{a.pkgs, d.pkgs, globCovers},
		{a.svcs, d.svcs, globCovers},
		{a.users, d.users, globCovers},
		{a.groups, d.groups, globCovers},
		{a.env, d.env, globCovers},
		{a.cwd, d.cwd, func(d, a string) bool { return d == a }},
		{a.path, d.path, func(d, a string) bool { return d == a }},
	} {
		for _, ae := range l.allow {
			for _, de := range l.deny {
				if l.covers(de.value, ae.value) {
					return bad("%s: everything it allows is denied by %s", ae, de)
				}
			}
		}
	}
	return nil
}

// subset reports whether every element of a is in b.
func subset(a, b []string) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}
