package scope

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kballard/go-shellquote"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources/exectype"
)

// ErrRule is wrapped by every error about a rule of a scope: one that does
// not parse, one for a type the signer is not allowed, one that can never
// decide anything (an allow shadowed by a deny, a duplicate).
var ErrRule = errors.New("invalid scope rule")

// RuleError is the error about one rule of a scope: it matches ErrRule
// with errors.Is, and Detail names the rule as written and the problem,
// for a caller that names the signer itself.
type RuleError struct {
	// Detail is the rule and the problem: `exec.commands[1] "bash **":
	// the executable must be an absolute path`.
	Detail string
}

func (e *RuleError) Error() string { return ErrRule.Error() + ": " + e.Detail }

// Is reports whether target is ErrRule.
func (e *RuleError) Is(target error) bool { return target == ErrRule }

// Bounds of one scope.
const (
	// MaxEntries bounds each list of a scope.
	MaxEntries = 1000
	// MaxEntryBytes bounds each entry of a list.
	MaxEntryBytes = 4096
)

// Rules are a signer's scopes, or its deny rules: each field left out
// places no restriction (allow) or denies nothing (deny).
type Rules struct {
	// Hosts are --where terms (ANDed) the agent's facts must match
	// (allow) or that, all matching, refuse the host (deny).
	Hosts []string `json:"hosts,omitempty" yaml:"hosts"`
	// Exec restricts commands: exec resources (command, onlyif, unless)
	// and scaffold post commands.
	Exec *Exec `json:"exec,omitempty" yaml:"exec"`
	// File restricts paths: those written (file names, archive names and
	// extract_parent, scaffold targets) by paths, those read (file and
	// scaffold sources, the current content a diff shows, creates) by
	// read_paths, else by paths.
	File *Files `json:"file,omitempty" yaml:"file"`
	// Package restricts package names.
	Package *Names `json:"package,omitempty" yaml:"package"`
	// Service restricts service names.
	Service *Names `json:"service,omitempty" yaml:"service"`
}

// Exec is the exec scope.
type Exec struct {
	// Commands are argv patterns: an absolute executable, then words, "*"
	// for exactly one argument, "**" (last) for any number of arguments.
	Commands []string `json:"commands,omitempty" yaml:"commands"`
	// Environment lists the KEY=VALUE entries an exec may set; "*" in the
	// value matches any text. Only with commands (or under deny).
	Environment []string `json:"environment,omitempty" yaml:"environment"`
	// Cwd lists the working directories an exec may use.
	Cwd []string `json:"cwd,omitempty" yaml:"cwd"`
	// Path lists the search paths (PATH values) an exec may use.
	Path []string `json:"path,omitempty" yaml:"path"`
}

// Files is the file scope.
type Files struct {
	// Paths are absolute path prefixes: a path is inside one when it is
	// the prefix or below it, component by component. They hold the paths
	// a resource writes, and the paths it reads when ReadPaths is not
	// set.
	Paths []string `json:"paths,omitempty" yaml:"paths"`
	// ReadPaths are absolute path prefixes holding the paths a resource
	// reads: a file's or a scaffold's source, the current content of
	// what it writes (a diff shows it), a creates path. Unset: Paths
	// decide; both unset: any path, except for a noop_only signer, which
	// then reads nothing.
	ReadPaths []string `json:"read_paths,omitempty" yaml:"read_paths"`
}

// Names is the package or service scope.
type Names struct {
	// Names are globs: "*" matches any text, everything else itself.
	Names []string `json:"names,omitempty" yaml:"names"`
}

// Scope is a signer's compiled allow and deny rules, ready to decide. A
// nil *Scope allows everything.
type Scope struct {
	allow, deny compiled
	// noopOnly is set for a signer that may only send noop requests: it
	// reads only the paths its scope lists.
	noopOnly bool
}

// Option adjusts Compile.
type Option func(*Scope)

// NoopOnly compiles the scope of a signer that may only send noop
// requests (noop_only): with neither file.read_paths nor file.paths set,
// it may read nothing, since a dry run's diffs show what it read.
func NoopOnly() Option { return func(s *Scope) { s.noopOnly = true } }

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

// Set reports whether r restricts anything.
func (r *Rules) Set() bool {
	return r != nil && (r.Hosts != nil || r.Exec != nil || r.File != nil || r.Package != nil || r.Service != nil)
}

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

func bad(format string, args ...any) error {
	return &RuleError{Detail: fmt.Sprintf(format, args...)}
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

// compileList checks each entry of a list with check, which returns the
// entry's canonical form, and refuses duplicates.
func compileList(rule string, list []string, check func(string) (string, error)) ([]entry, error) {
	if len(list) > MaxEntries {
		return nil, bad("%s: %d entries, at most %d", rule, len(list), MaxEntries)
	}
	out := make([]entry, 0, len(list))
	for i, raw := range list {
		where := fmt.Sprintf("%s[%d]", rule, i)
		if len(raw) > MaxEntryBytes {
			return nil, bad("%s: longer than %d bytes", where, MaxEntryBytes)
		}
		v, err := check(raw)
		if err != nil {
			return nil, bad("%s %.80q: %s", where, raw, err)
		}
		for _, e := range out {
			if e.value == v {
				return nil, bad("%s %.80q: the same as %s, so it can never decide anything", where, raw, e.rule)
			}
		}
		out = append(out, entry{rule: where, value: v, raw: raw})
	}
	return out, nil
}

// noDuplicates refuses a list holding the same value twice.
func noDuplicates(rule string, list []string) error {
	for i, v := range list {
		if j := slices.Index(list[:i], v); j >= 0 {
			return bad("%s[%d] %.80q: the same as %s[%d]", rule, i, v, rule, j)
		}
	}
	return nil
}

// checkDir checks an absolute path and returns it cleaned.
func checkDir(s string) (string, error) {
	switch {
	case s == "":
		return "", errors.New("empty")
	case strings.ContainsRune(s, 0):
		return "", errors.New("contains a NUL byte")
	case !filepath.IsAbs(s):
		return "", errors.New("not an absolute path")
	case strings.ContainsAny(s, "*?["):
		return "", errors.New("paths are prefixes, not globs: leave out * ? [")
	}
	return filepath.Clean(s), nil
}

// checkSearchPath checks a colon separated list of absolute directories
// and returns it with each cleaned.
func checkSearchPath(s string) (string, error) {
	if s == "" {
		return "", errors.New("empty")
	}
	dirs := strings.Split(s, ":")
	for i, d := range dirs {
		c, err := checkDir(d)
		if err != nil {
			return "", fmt.Errorf("directory %q: %w", d, err)
		}
		dirs[i] = c
	}
	return strings.Join(dirs, ":"), nil
}

// checkGlob checks a name glob.
func checkGlob(s string) (string, error) {
	switch {
	case s == "":
		return "", errors.New("empty")
	case strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		return "", errors.New("contains white space or a control character")
	}
	return s, nil
}

// checkEnv checks a KEY=VALUE-glob entry.
func checkEnv(s string) (string, error) {
	key, _, ok := strings.Cut(s, "=")
	switch {
	case !ok:
		return "", errors.New("not KEY=VALUE (use KEY=* for any value)")
	case !exectype.ValidEnvKey(key):
		return "", fmt.Errorf("key %q is not a variable name", key)
	case strings.ContainsRune(s, 0):
		return "", errors.New("contains a NUL byte")
	}
	return s, nil
}

// compilePatterns checks and splits command patterns.
func compilePatterns(rule string, list []string) ([]pattern, error) {
	if len(list) > MaxEntries {
		return nil, bad("%s: %d entries, at most %d", rule, len(list), MaxEntries)
	}
	out := make([]pattern, 0, len(list))
	for i, raw := range list {
		where := fmt.Sprintf("%s[%d]", rule, i)
		if len(raw) > MaxEntryBytes {
			return nil, bad("%s: longer than %d bytes", where, MaxEntryBytes)
		}
		p, err := parsePattern(raw)
		if err != nil {
			return nil, bad("%s %.80q: %s", where, raw, err)
		}
		p.rule = where
		for _, q := range out {
			if slices.Equal(q.words, p.words) {
				return nil, bad("%s %.80q: the same as %s, so it can never decide anything", where, raw, q.rule)
			}
		}
		out = append(out, p)
	}
	return out, nil
}

// parsePattern splits a command pattern: words with shell-like quoting,
// the first an absolute executable (cleaned), "**" only last.
func parsePattern(raw string) (pattern, error) {
	if strings.ContainsRune(raw, 0) {
		return pattern{}, errors.New("contains a NUL byte")
	}
	words, err := shellquote.Split(raw)
	if err != nil {
		return pattern{}, err
	}
	if len(words) == 0 {
		return pattern{}, errors.New("empty")
	}
	switch exe := words[0]; {
	case exe == wildOne || exe == wildRest:
		return pattern{}, errors.New("the executable must be written out, not a wildcard")
	case !filepath.IsAbs(exe):
		return pattern{}, errors.New("the executable must be an absolute path")
	}
	words[0] = filepath.Clean(words[0])
	for i, w := range words {
		if w == wildRest && i != len(words)-1 {
			return pattern{}, errors.New(`"**" stands for the remaining arguments: it must be the last word`)
		}
	}
	return pattern{raw: raw, words: words}, nil
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
