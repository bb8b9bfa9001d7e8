package scope

import (
	"errors"
	"fmt"
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

// bad is a RuleError with a formatted detail.
func bad(format string, args ...any) error {
	return &RuleError{Detail: fmt.Sprintf(format, args...)}
}

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
	// Hosts are --where terms and "select: EXPR" entries (a compound
	// expression, see protocol.ParseSelect), ANDed, that the agent's facts
	// must match (allow) or that, all matching, refuse the host (deny).
	Hosts HostEntries `json:"hosts,omitempty" yaml:"hosts"`
	// Exec restricts commands: exec resources (command, onlyif, unless)
	// and scaffold post commands.
	Exec *Exec `json:"exec,omitempty" yaml:"exec"`
	// File restricts paths: those written (file names, archive names and
	// extract_parent, scaffold targets, the account files and a managed
	// home of user and group resources) by paths, those read (file and
	// scaffold sources, the current content a diff shows, creates) by
	// read_paths, else by paths.
	File *Files `json:"file,omitempty" yaml:"file"`
	// Package restricts package names.
	Package *Names `json:"package,omitempty" yaml:"package"`
	// Service restricts service names.
	Service *Names `json:"service,omitempty" yaml:"service"`
	// User restricts account names: the users a user resource manages
	// and those a group resource adds as members.
	User *Names `json:"user,omitempty" yaml:"user"`
	// Group restricts group names: the groups a group resource manages
	// and those a user resource joins (its primary group as written, by
	// name or id, and its supplementary groups).
	Group *Names `json:"group,omitempty" yaml:"group"`
	// Net restricts the URLs a resource fetches (an archive's url, each
	// redirect hop).
	Net *Net `json:"net,omitempty" yaml:"net"`
}

// Net is the network scope.
type Net struct {
	// URLs are http or https URL prefixes: scheme, host and port (the
	// scheme's default when left out) must be equal, host names compared
	// in lower case, and the path must be the prefix's path or below it,
	// component by component. Unset: any URL except those whose host is
	// (or resolves to) a loopback, link-local, unspecified or cloud
	// metadata address; set, such an address is fetched only when a
	// prefix names it.
	URLs []string `json:"urls,omitempty" yaml:"urls"`
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

// Names is the package, service, user or group scope.
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

// Set reports whether r restricts anything.
func (r *Rules) Set() bool {
	return r != nil && (r.Hosts != nil || r.Exec != nil || r.File != nil || r.Package != nil || r.Service != nil || r.User != nil || r.Group != nil || r.Net != nil)
}
