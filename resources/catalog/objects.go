package catalog

import (
	"fmt"
	"maps"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/applytype"
	"github.com/ccm-fleet/ccm/resources/archivetype"
	"github.com/ccm-fleet/ccm/resources/exectype"
	"github.com/ccm-fleet/ccm/resources/filetype"
	"github.com/ccm-fleet/ccm/resources/grouptype"
	"github.com/ccm-fleet/ccm/resources/pkgtype"
	"github.com/ccm-fleet/ccm/resources/scaffoldtype"
	"github.com/ccm-fleet/ccm/resources/servicetype"
	"github.com/ccm-fleet/ccm/resources/usertype"
)

// Kind is how a resource uses a host object.
type Kind int

const (
	// PathWrite is a path the resource creates, replaces or removes.
	PathWrite Kind = iota + 1
	// PathRead is a path whose content, or whose existence, the resource
	// reads; a diff or a noop message may show what it read.
	PathRead
	// Command is a command line the resource runs.
	Command
	// Environment is one KEY=VALUE entry a command runs with.
	Environment
	// WorkingDir is the directory a command runs in.
	WorkingDir
	// SearchPath is the PATH a command is looked up and runs with.
	SearchPath
	// Package is a package name handed to the package manager.
	Package
	// Service is a service name handed to the service manager.
	Service
	// URL is a URL the resource fetches.
	URL
	// Address is a network address the resource dials, as
	// tcp://HOST:PORT or udp://HOST:PORT (a goss addr rule).
	Address
	// UserName is an account name the resource creates, changes, removes
	// or adds to a group.
	UserName
	// GroupName is a group name the resource creates, changes, removes,
	// or adds a user to (by name or, as written, by id).
	GroupName
	// UID is a user id the resource gives an account, in decimal.
	UID
)

var kindNames = map[Kind]string{
	PathWrite: "path written", PathRead: "path read", Command: "command", Environment: "environment",
	WorkingDir: "working directory", SearchPath: "search path", Package: "package", Service: "service", URL: "url", Address: "address",
	UserName: "user", GroupName: "group", UID: "uid",
}

// String names the kind: "path read".
func (k Kind) String() string {
	if n, ok := kindNames[k]; ok {
		return n
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Runner says how a command line is split and started.
type Runner int

const (
	// RunDirect splits the line as a shell would and runs it without one
	// (health checks, scaffold post commands, exec guards of the posix
	// provider).
	RunDirect Runner = iota
	// RunByProvider runs the line the way the resource's exec provider
	// does: directly for posix, through the shell for shell.
	RunByProvider
	// RunShell runs the line with sh -c, sh looked up in the agent's
	// PATH, whatever the resource's provider (goss command rules).
	RunShell
)

// HostObject is one thing on the host a resource touches.
type HostObject struct {
	// Kind is how it is used.
	Kind Kind
	// Check names the property in decisions: "name", "source", "target",
	// "creates", "command", "health_checks[0]", "post[0] *.conf".
	Check string
	// Value is the object as the host will use it: a relative source
	// joined to the working directory, a command line as written.
	Value string
	// Tree says that a path is a directory the resource writes, or reads,
	// anything below.
	Tree bool
	// Base is the directory a relative path was joined to (the request's
	// working directory, holding the files it brought); "" when the path
	// was absolute.
	Base string
	// Runner says how a command is split and started.
	Runner Runner
	// Search is the PATH a command without a slash is looked up in; ""
	// is the agent's own.
	Search string
	// Placeholder says that a command is given a value not known before
	// it runs: "{}" in a word, or else an appended last argument, stands
	// for a file the resource renders.
	Placeholder bool
}

// String is the object on one line: `path read source "/etc/shadow"`.
func (o HostObject) String() string {
	return fmt.Sprintf("%s %s %q", o.Kind, o.Check, o.Value)
}

func fileObjects(p *filetype.Properties, workingDir string) []HostObject {
	out := []HostObject{{Kind: PathWrite, Check: "name", Value: p.Name}}
	if p.Ensure == filetype.EnsurePresent && p.ManagesContent() {
		// A diff shows the current content next to the desired one.
		out = append(out, HostObject{Kind: PathRead, Check: "name", Value: p.Name})
	}
	if p.Source != "" {
		// The type reads filetype.SourcePath of it.
		o := HostObject{Kind: PathRead, Check: "source", Value: p.Source}
		if path, err := filetype.SourcePath(p.Source, workingDir); err == nil {
			o.Value = path
			if !filepath.IsAbs(p.Source) {
				o.Base = filepath.Clean(workingDir)
			}
		}
		out = append(out, o)
	}
	return out
}

func scaffoldObjects(p *scaffoldtype.Properties, workingDir string) []HostObject {
	out := []HostObject{{Kind: PathWrite, Check: "target", Value: p.Name, Tree: true}}
	if p.Ensure == scaffoldtype.EnsurePresent {
		// A diff shows the target's current files next to the rendered ones.
		out = append(out, HostObject{Kind: PathRead, Check: "target", Value: p.Name, Tree: true})
	}
	// The source's files are the templates rendered (also to find what
	// an absent scaffold removes).
	if scaffoldtype.IsURL(p.Source) {
		out = append(out, HostObject{Kind: URL, Check: "source", Value: p.Source})
		if path, ok := fileURLPath(p.Source); ok {
			out = append(out, HostObject{Kind: PathRead, Check: "source", Value: path, Tree: true})
		}
	} else {
		// The type renders scaffoldtype.ResolveSource of it.
		o := HostObject{Kind: PathRead, Check: "source", Value: scaffoldtype.ResolveSource(p.Source, workingDir), Tree: true}
		if !filepath.IsAbs(p.Source) && workingDir != "" {
			o.Base = filepath.Clean(workingDir)
		}
		out = append(out, o)
	}
	for i, post := range p.Post {
		for _, glob := range slices.Sorted(maps.Keys(post)) {
			out = append(out, HostObject{Kind: Command, Check: fmt.Sprintf("post[%d] %s", i, glob), Value: post[glob], Runner: RunDirect, Placeholder: true})
		}
	}
	return out
}

func archiveObjects(p *archivetype.Properties, _ string) []HostObject {
	out := []HostObject{
		{Kind: URL, Check: "url", Value: archivetype.RedactURL(p.URL)},
		{Kind: PathWrite, Check: "name", Value: p.Name},
	}
	if p.ExtractParent != "" {
		out = append(out, HostObject{Kind: PathWrite, Check: "extract_parent", Value: p.ExtractParent, Tree: true})
	}
	if p.Creates != "" {
		out = append(out, HostObject{Kind: PathRead, Check: "creates", Value: p.Creates})
	}
	return out
}

func execObjects(p *exectype.Properties, _ string) []HostObject {
	// The exec provider looks commands and guards up in the resource's
	// path, else in exectype.BasePath, never in the agent's own PATH.
	search := p.Path
	if search == "" {
		search = exectype.BasePath
	}
	var out []HostObject
	for _, c := range []struct{ check, line string }{{"command", p.CommandLine()}, {"onlyif", p.OnlyIf}, {"unless", p.Unless}} {
		if c.line != "" {
			out = append(out, HostObject{Kind: Command, Check: c.check, Value: c.line, Runner: RunByProvider, Search: search})
		}
	}
	for _, kv := range p.Environment {
		out = append(out, HostObject{Kind: Environment, Check: "environment", Value: kv})
	}
	if p.Cwd != "" {
		out = append(out, HostObject{Kind: WorkingDir, Check: "cwd", Value: p.Cwd})
	}
	if p.Path != "" {
		out = append(out, HostObject{Kind: SearchPath, Check: "path", Value: p.Path})
	}
	if p.Creates != "" {
		out = append(out, HostObject{Kind: PathRead, Check: "creates", Value: p.Creates})
	}
	return out
}

// applyObjects: an apply resource reads its child manifest (relative to
// the parent manifest's directory). The child's own resources are prepared
// and judged one by one when the child runs.
func applyObjects(p *applytype.Properties, workingDir string) []HostObject {
	o := HostObject{Kind: PathRead, Check: "name", Value: applytype.ChildPath(p.Name, workingDir)}
	if !filepath.IsAbs(p.Name) && workingDir != "" {
		o.Base = filepath.Clean(workingDir)
	}
	return []HostObject{o}
}

func packageObjects(p *pkgtype.Properties, _ string) []HostObject {
	return []HostObject{{Kind: Package, Check: "name", Value: p.Name}}
}

func serviceObjects(p *servicetype.Properties, _ string) []HostObject {
	return []HostObject{{Kind: Service, Check: "name", Value: p.Name}}
}

// Account files the user and group providers write (through the shadow
// tools, which also read them).
var (
	userFiles  = []string{"/etc/passwd", "/etc/shadow", "/etc/group", "/etc/gshadow"}
	groupFiles = []string{"/etc/group", "/etc/gshadow"}
)

func accountFiles(files []string) []HostObject {
	out := make([]HostObject, 0, len(files))
	for _, f := range files {
		out = append(out, HostObject{Kind: PathWrite, Check: "account files", Value: f})
	}
	return out
}

// userObjects: the account's name, its uid, the groups it joins (its
// primary group as written, by name or id), the account files and, with
// manage_home, the home directory it creates, moves to or removes.
func userObjects(p *usertype.Properties, _ string) []HostObject {
	out := []HostObject{{Kind: UserName, Check: "name", Value: p.Name}}
	if p.UID != nil {
		out = append(out, HostObject{Kind: UID, Check: "uid", Value: strconv.FormatInt(p.UID.Int(), 10)})
	}
	if p.Group != "" {
		out = append(out, HostObject{Kind: GroupName, Check: "group", Value: p.Group})
	}
	if p.GID != nil {
		out = append(out, HostObject{Kind: GroupName, Check: "gid", Value: strconv.FormatInt(p.GID.Int(), 10)})
	}
	for _, g := range p.Groups {
		out = append(out, HostObject{Kind: GroupName, Check: "groups", Value: g})
	}
	out = append(out, accountFiles(userFiles)...)
	if p.ManageHome && p.Home != "" {
		out = append(out, HostObject{Kind: PathWrite, Check: "home", Value: p.Home, Tree: true})
	}
	return out
}

// groupObjects: the group's name, the users it adds and the group files.
func groupObjects(p *grouptype.Properties, _ string) []HostObject {
	out := []HostObject{{Kind: GroupName, Check: "name", Value: p.Name}}
	for _, m := range p.Members {
		out = append(out, HostObject{Kind: UserName, Check: "members", Value: m})
	}
	return append(out, accountFiles(groupFiles)...)
}

// healthObjects are the health-check commands every type may carry: split
// as a shell would and run without one, looked up in the agent's PATH
// (goss checks declare their rules' objects: gossObjects).
func healthObjects(c *resources.CommonProperties) []HostObject {
	out := make([]HostObject, 0, len(c.HealthChecks))
	for i, hc := range c.HealthChecks {
		if hc.IsGoss() {
			continue
		}
		out = append(out, HostObject{Kind: Command, Check: fmt.Sprintf("health_checks[%d]", i), Value: hc.Command, Runner: RunDirect})
	}
	return out
}

// fileURLPath is the local directory a file:// URL names (host empty or
// localhost), as the scaffold provider reads it.
func fileURLPath(raw string) (string, bool) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "file" || (u.Host != "" && u.Host != "localhost") || !filepath.IsAbs(u.Path) {
		return "", false
	}
	return filepath.Clean(u.Path), true
}
