package scope

import (
	"fmt"
	"slices"
	"strings"

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

// compileSide checks and compiles one side; prefix is "" or "deny.".
func compileSide(prefix string, r *Rules, types []string, allow bool) (compiled, error) {
	c := compiled{side: prefix}
	if r == nil {
		return c, nil
	}
	needs := func(what string, any ...string) error {
		for _, t := range any {
			if slices.Contains(types, t) {
				return nil
			}
		}
		return bad("%s%s: the signer is not allowed %s, so the rule can never apply", prefix, what, strings.Join(any, " or "))
	}
	if r.Hosts != nil {
		if len(r.Hosts) == 0 {
			return c, bad("%shosts: empty; leave it out to allow every host", prefix)
		}
		f, err := protocol.ParseFilter(r.Hosts)
		if err != nil {
			return c, bad("%shosts: %s", prefix, protocol.AsError(err).Message)
		}
		c.hosts, c.terms = f, make([]string, len(f.Where))
		for i, t := range f.Where {
			c.terms[i] = t.String()
		}
		if err := noDuplicates(prefix+"hosts", c.terms); err != nil {
			return c, err
		}
	}
	var err error
	if e := r.Exec; e != nil {
		if err := needs("exec", "exec"); err != nil {
			return c, err
		}
		if len(e.Commands) == 0 && len(e.Environment) == 0 && len(e.Cwd) == 0 && len(e.Path) == 0 {
			return c, bad("%sexec: empty; give commands (or leave exec out)", prefix)
		}
		if allow && len(e.Commands) == 0 {
			return c, bad("exec: environment, cwd and path restrict commands: list the commands too (exec.commands)")
		}
		c.hasExec = len(e.Commands) > 0
		if c.cmds, err = compilePatterns(prefix+"exec.commands", e.Commands); err != nil {
			return c, err
		}
		if c.env, err = compileList(prefix+"exec.environment", e.Environment, checkEnv); err != nil {
			return c, err
		}
		if c.cwd, err = compileList(prefix+"exec.cwd", e.Cwd, checkDir); err != nil {
			return c, err
		}
		if c.path, err = compileList(prefix+"exec.path", e.Path, checkSearchPath); err != nil {
			return c, err
		}
	}
	if f := r.File; f != nil {
		if err := needs("file", "file", "archive", "scaffold", "exec"); err != nil {
			return c, err
		}
		if len(f.Paths) == 0 && len(f.ReadPaths) == 0 {
			return c, bad("%sfile: empty; give paths or read_paths (or leave file out)", prefix)
		}
		if f.Paths != nil && len(f.Paths) == 0 {
			return c, bad("%sfile.paths: empty; leave it out", prefix)
		}
		if f.ReadPaths != nil && len(f.ReadPaths) == 0 {
			return c, bad("%sfile.read_paths: empty; leave it out", prefix)
		}
		if c.paths, err = compileList(prefix+"file.paths", f.Paths, checkDir); err != nil {
			return c, err
		}
		if c.reads, err = compileList(prefix+"file.read_paths", f.ReadPaths, checkDir); err != nil {
			return c, err
		}
	}
	for _, n := range []struct {
		typ   string
		names *Names
		out   *[]entry
	}{{"package", r.Package, &c.pkgs}, {"service", r.Service, &c.svcs}} {
		if n.names == nil {
			continue
		}
		if err := needs(n.typ, n.typ); err != nil {
			return c, err
		}
		if len(n.names.Names) == 0 {
			return c, bad("%s%s: empty; give names (or leave %s out)", prefix, n.typ, n.typ)
		}
		if *n.out, err = compileList(prefix+n.typ+".names", n.names.Names, checkGlob); err != nil {
			return c, err
		}
	}
	return c, nil
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
	for _, l := range []struct {
		allow, deny []entry
		covers      func(deny, allow string) bool
	}{
		{a.paths, d.paths, func(d, a string) bool { return within(a, d) }},
		{a.reads, d.reads, func(d, a string) bool { return within(a, d) }},
		{a.pkgs, d.pkgs, globCovers},
		{a.svcs, d.svcs, globCovers},
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
