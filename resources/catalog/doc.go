// Package catalog is the one list of resource types: for each, its name,
// its type (which makes its properties value), the providers the built-in
// registry wires for it, and a declaration of every host object a resource
// of that type touches: the paths it writes and reads, the commands it
// runs (with where they are looked up and how they are split), the
// packages and services it names, the URLs it fetches.
//
// Each entry also holds what else is known per type: its "ensure TYPE"
// command line and flags (cmd/internal/resflags registers them), whether a
// refresh acts on it (--subscribe), whether its source property names
// files a request's bundle carries, and whether it is a one-off action
// with no state to drift from. Code outside the package reads these fields
// and never compares a type's name (internal/codecheck reports it).
//
// A declaration reads a typed, validated properties value, the same value
// the engine runs, and returns HostObjects; Objects adds what every type
// shares: health-check commands, and what the goss rules of health checks
// touch (GossObjects: files read, sh -c commands, URLs, addresses dialled,
// packages, services; a goss key it cannot declare is refused by name,
// ErrUndeclarable). Whoever judges a resource (the signer
// scopes of an agent's policy, ccm-orch policy check) walks these objects
// and never switches on a type's name: a new type, or a new property that
// names something on the host, is declared here once and is judged
// everywhere.
//
// Template files: the only ones a resource reads on an agent are a
// scaffold's source tree, declared as a path read. The templates' file()
// function reads files below a manifest's own directory and is exposed to
// local runs only (ccm-agent apply), never to a request or an assignment,
// whose templates see facts and data alone; a manifest's data and its
// relative sources come from the request's own bundle, written to a fresh
// private directory (HostObject.Base).
//
// The package only describes; it touches nothing on the host.
package catalog
