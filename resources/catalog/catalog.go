package catalog

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

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

// Entry is one resource type of the catalog.
type Entry struct {
	// Name is the type's name, as requests and manifests write it.
	Name string
	// Type decodes the properties and applies them.
	Type resources.Type
	// Providers are the names of the providers the built-in registry
	// wires for the type, in registration order.
	Providers []string
	// Positional is CCM's positional second argument of the type's
	// command line; nil when that argument is only the ensure value.
	Positional *Positional
	// ShellFree, for a type whose other providers run through a shell,
	// are the providers that do not (see NeedsShell).
	ShellFree []string
	// Command is the type's "ensure TYPE" command line; nil for a type
	// that has none (apply exists only inside manifests).
	Command *CommandLine
	// Refreshes reports whether a resource of the type acts on a refresh,
	// as in CCM: when a resource it subscribes to changed, it runs again
	// (exec) or restarts (service). Its command takes --subscribe.
	Refreshes bool
	// BundleSource reports whether the type's source property may name a
	// local file or directory, relative to the manifest, that a request's
	// bundle carries (manifest.NewBundle).
	BundleSource bool
	// OneOff reports whether the type is a one-off action with no state
	// to drift from: an ensure request of it (ccm-orch ensure exec) runs
	// a command, and the dashboard's drift page leaves it out.
	OneOff bool
	// ReplyTimeout, when set, is how long a fleet request holding a
	// resource of the type waits for each host's reply by default, where
	// the type is slower than the fleet's default allows (a package
	// manager fetching and installing); see ReplyTimeout.
	ReplyTimeout time.Duration
	// declare lists the host objects of properties of this type (its
	// own: Objects adds the shared ones).
	declare func(props resources.Properties, workingDir string) []HostObject
	// accounts lists the user and group resources (type#name) that
	// properties of this type name as an owner or group; nil for none.
	accounts func(props resources.Properties) []string
}

// AccountRefs returns the user and group resources a resource with
// properties props names (a file's or an archive's owner and group, as
// user#NAME and group#NAME): a manifest runs those of them it manages
// first and requires them, as Puppet's autorequire does. Numeric ids
// name no resource.
func AccountRefs(props resources.Properties) []string {
	e, ok := ForProperties(props)
	if !ok || e.accounts == nil {
		return nil
	}
	return e.accounts(props)
}

// ownerRefs are the refs of an owner and a group, names only.
func ownerRefs(owner, group string) []string {
	var out []string
	for _, r := range []struct{ typ, name string }{{"user", owner}, {"group", group}} {
		if r.name != "" && strings.Trim(r.name, "0123456789") != "" {
			out = append(out, r.typ+"#"+r.name)
		}
	}
	return out
}

// PackageReplyTimeout is a package resource's ReplyTimeout: apt and dnf
// fetch and install for tens of seconds on a real host (longer while they
// wait for another holder of their lock), well past a fleet request's
// default reply timeout.
const PackageReplyTimeout = 5 * time.Minute

// ReplyTimeout is the longest ReplyTimeout of the named types, or 0 when
// none has one.
func ReplyTimeout(types ...string) time.Duration {
	var d time.Duration
	for _, t := range types {
		if e, ok := Lookup(t); ok && e.ReplyTimeout > d {
			d = e.ReplyTimeout
		}
	}
	return d
}

// entries is the catalog, sorted by name. Each declaration reads the
// type's own properties value (see typed).
var entries = []Entry{
	{Name: "apply", Type: applytype.Type{}, Providers: []string{applytype.ProviderName}, declare: typed(applyObjects)},
	{Name: "archive", Type: archivetype.Type{}, Providers: []string{"http"}, declare: typed(archiveObjects),
		accounts: func(p resources.Properties) []string {
			a := p.(*archivetype.Properties)
			return ownerRefs(a.Owner, a.Group)
		},
		Command:    archiveCommand,
		Positional: &Positional{Property: "url", Help: "or the URL, as in CCM", sets: isURL}},
	{Name: "exec", Type: exectype.Type{}, Providers: []string{"posix", "shell"}, declare: typed(execObjects),
		Command: execCommand, Refreshes: true, OneOff: true,
		ShellFree: []string{"posix"}},
	{Name: "file", Type: filetype.Type{}, Providers: []string{"posix"}, declare: typed(fileObjects),
		accounts: func(p resources.Properties) []string {
			f := p.(*filetype.Properties)
			return ownerRefs(f.Owner, f.Group)
		},
		Command: fileCommand, BundleSource: true},
	{Name: "group", Type: grouptype.Type{}, Providers: []string{"groupadd"}, declare: typed(groupObjects),
		Command: groupCommand},
	{Name: "package", Type: pkgtype.Type{}, Providers: []string{"apt", "dnf"}, declare: typed(packageObjects),
		Command: packageCommand, ReplyTimeout: PackageReplyTimeout},
	{Name: "scaffold", Type: scaffoldtype.Type{}, Providers: []string{"choria"}, declare: typed(scaffoldObjects),
		Command: scaffoldCommand, BundleSource: true,
		Positional: &Positional{Property: "source", Help: "or the source, as in CCM (NAME SOURCE [ENSURE])", EnsureAfter: true, sets: notPresence}},
	{Name: "service", Type: servicetype.Type{}, Providers: []string{"systemd"}, declare: typed(serviceObjects),
		Command: serviceCommand, Refreshes: true},
	{Name: "user", Type: usertype.Type{}, Providers: []string{"useradd"}, declare: typed(userObjects),
		accounts: func(p resources.Properties) []string {
			u := p.(*usertype.Properties)
			out := ownerRefs("", u.Group)
			for _, g := range u.Groups {
				out = append(out, "group#"+g)
			}
			return out
		},
		Command: userCommand},
}

// Entries returns the catalog, sorted by name. The slice is the caller's.
func Entries() []Entry { return slices.Clone(entries) }

// Names returns the type names, sorted.
func Names() []string {
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = e.Name
	}
	return out
}

// Types returns each type, in name order.
func Types() []resources.Type {
	out := make([]resources.Type, len(entries))
	for i, e := range entries {
		out[i] = e.Type
	}
	return out
}

// Providers returns, per type name, the built-in provider names.
func Providers() map[string][]string {
	out := make(map[string][]string, len(entries))
	for _, e := range entries {
		out[e.Name] = slices.Clone(e.Providers)
	}
	return out
}

// Lookup returns the entry of the type called name.
func Lookup(name string) (Entry, bool) {
	i := slices.IndexFunc(entries, func(e Entry) bool { return e.Name == name })
	if i < 0 {
		return Entry{}, false
	}
	return entries[i], true
}

// Objects lists every host object a resource of type typeName with the
// validated properties props touches, as the host will use it: relative
// sources are joined to workingDir (the directory the request's files
// were written to; "" when it has none), the type's own objects first,
// then the health-check commands every type shares, then what the goss
// rules of its health checks touch (GossObjects; goss rules the catalog
// cannot declare are an error wrapping resources.ErrForbidden). A type the catalog
// does not hold, or properties of another type, is an error wrapping
// resources.ErrUnknownType: such a resource cannot be judged.
func Objects(typeName string, props resources.Properties, workingDir string) ([]HostObject, error) {
	e, ok := Lookup(typeName)
	if !ok {
		return nil, fmt.Errorf("%w %q: not in the resource catalog", resources.ErrUnknownType, typeName)
	}
	if props == nil {
		return nil, fmt.Errorf("%s: %w: no properties", typeName, resources.ErrInvalid)
	}
	out := e.declare(props, workingDir)
	if out == nil {
		return nil, fmt.Errorf("%w %q: the properties are a %T", resources.ErrUnknownType, typeName, props)
	}
	goss, err := gossObjects(props.Common())
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %w", typeName, resources.ErrForbidden, err)
	}
	return append(append(out, healthObjects(props.Common())...), goss...), nil
}

// typed adapts a declaration over a type's own properties; properties of
// another type declare nil, which Objects refuses.
func typed[P resources.Properties](fn func(P, string) []HostObject) func(resources.Properties, string) []HostObject {
	return func(props resources.Properties, workingDir string) []HostObject {
		p, ok := props.(P)
		if !ok {
			return nil
		}
		return append([]HostObject{}, fn(p, workingDir)...)
	}
}

// ForProperties returns the entry whose type makes properties of the
// dynamic type of props.
func ForProperties(props resources.Properties) (Entry, bool) {
	if props == nil {
		return Entry{}, false
	}
	want := reflect.TypeOf(props)
	for _, e := range entries {
		if reflect.TypeOf(e.Type.NewProperties()) == want {
			return e, true
		}
	}
	return Entry{}, false
}
