// Package scope narrows what one signer of an agent's policy may do beyond
// the resource types it is allowed: on which hosts (a --where filter the
// agent's facts must match), which commands (argv patterns), which paths
// it writes (file.paths) and reads (file.read_paths, else file.paths),
// which packages and services (globs), which URLs a resource fetches
// (net.urls prefixes, see internal/urlscope; without them no loopback,
// link-local or metadata address), with deny rules that beat the allow
// rules and a default of deny for a type once a scope is set for it. A
// noop_only signer reads only the paths its scope lists: a dry run's diff
// shows what it read.
//
// Rules is the YAML/JSON shape a policy holds (the allow scopes sit beside
// the signer's allow list, the same shapes again under deny). Compile
// checks it once, when the policy loads: a rule that cannot parse, a scope
// for a type the signer is not allowed, or an allow entry that a deny
// entry fully shadows is an error naming the rule. Scope then decides on
// one host's facts (Hosts) and on each resource as the engine will run it
// (Resource): every host object the resource catalog (resources/catalog)
// declares for its type is judged by the scope of its kind, with no switch
// on the type here. Each Decision names the rule that made it and the
// value it judged, after cleaning paths and resolving commands, symbolic
// links and ".." the way the host will (Resolver).
//
// The package judges typed resource properties; it never runs anything,
// and touches the file system only to read links, list the links below a
// directory a resource reads, and look commands up.
package scope
