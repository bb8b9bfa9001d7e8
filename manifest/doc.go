// Package manifest reads, resolves and runs manifests: many resources, with
// data, a facts-driven hierarchy of overrides, ordering, require, subscribe
// and fail_on_error, applied on one host through the resources engine. It
// also packs a manifest and the files its relative sources name into a
// Bundle for fleet requests, and unpacks one on an agent.
//
// # Format
//
//	data:                 # base data: data.* in templates and conditions
//	  motd: managed by ccm
//	hierarchy:            # optional; default order ["default"]
//	  order: ["os:${ lookup('facts.os') }", "role:{{ lookup('facts.role') }}"]
//	  merge: first        # or deep
//	overrides:
//	  "os:rhel": {motd: managed by ccm on rhel}
//	ccm:
//	  fail_on_error: false
//	  pre_message: "..."  # templated, printed before the run
//	  post_message: "..." # templated, printed after a run with no failures
//	  resources:
//	    - package:        # list form: {name: properties} entries
//	        - defaults: {ensure: present}
//	        - nginx: {}
//	    - package:        # single-object form; name may be a list
//	        name: [curl, jq]
//	    - file:
//	        - /etc/motd:
//	            content: "{{ lookup('data.motd') }}"
//	            "*": "{{ lookup('data.root_owned') }}"
//
// Every key is checked: an unknown key at the top level, in hierarchy or ccm,
// or an unknown property of a resource (also inside control and inside a
// literal "*" object) is an error naming the key and the resource, e.g.
// `resources[2] file#/etc/motd: unknown property "colour"`. Properties are
// the JSON names of each type's Properties struct (see PropertyNames);
// /schemas/manifest.schema.json describes the same format.
//
// # Resources
//
// ccm.resources is a list; each item maps one type to its resources:
//
//   - List form: a list of single-key {name: properties} maps. An entry
//     named "defaults" is not a resource: its properties are merged under
//     those of every other entry of the same list, property by property, the
//     entry's own value winning (its position in the list does not
//     matter; at most one per list). A
//     resource literally named "defaults" needs the single-object form. The
//     entry's key is the name; a name property is refused there.
//   - Single-object form: one object of properties with a name that is a
//     string or a list of strings: one resource per name, with the same
//     properties.
//
// A name may be a template; one whose value is a list also makes one
// resource per element. The "*" property takes an object, or a template giving one (e.g. data), whose keys
// become properties; setting a property both directly and through "*" is an
// error, and "*" may not set name. "*" works in defaults entries too.
//
// Relative file and scaffold source paths resolve against the manifest's
// working directory (the directory of the file Load read, or where a bundle
// was unpacked).
//
// # Data and hierarchy
//
// Data is resolved before anything else, as CCM's hierarchical data
// resolver does (Hiera.Resolve), in this order:
//
//  1. data: the base data.
//  2. The overrides the hierarchy selects. Each hierarchy.order entry
//     (default ["default"]) is a template over facts only ({{ }} or ${ });
//     a fact the host lacks reads as "", and an entry whose templates all
//     give "" does not match (lookup of data. keys is an error). An entry
//     matches when the override its text names exists. With merge: first
//     (the default) only the first matching override is used and its
//     top-level keys replace the base's whole. With merge: deep every
//     matching override is merged into the base in order, later entries
//     winning: objects merge key by key, lists concatenate (earlier items
//     first), any other value is replaced.
//  3. RunOptions.Data (ccm-agent apply --data FILE), deep-merged the same
//     way.
//  4. Validation: "# @require" and "# @validate EXPR" comment lines above a
//     key of a YAML document's data (or the JSON form, data_rules) are
//     checked against the final data (Validate, ErrValidation).
//
// Strings in data and in the selected overrides are templates over the
// facts too (a string that is one template keeps its value's type), as in
// CCM. Resource properties (except control, which holds expressions),
// names, "*" values and the pre/post messages are templates over facts and
// the resolved data (facts/Facts, data/Data); control.if and control.unless
// are evaluated against the same facts and data. Locally (AllowEnviron,
// AllowFiles) templates may also read environ/Environ and file(),
// template() and jet() files below the working directory; a remote run
// exposes neither. A template reading a key that does not exist is an
// error, not an empty string.
//
// # API for callers outside the manifest format
//
// Hierarchical data on its own (a CCM hiera file, ./.hiera, hiera data in
// a KV value) is read with ParseHiera(bytes) and resolved with
// (*Hiera).ResolveWith(facts, extra), which returns the data and the
// override keys applied and checks the annotations; (*Hiera).Resolve skips
// the checks. (*Manifest).Hiera gives a manifest's. DefaultOrder, MergeFirst,
// MergeDeep, DeepMerge and Validate are what those use. Expressions are
// package templates': templates.New(facts, data, templates.WithEnviron(...),
// templates.WithFiles(dir), templates.WithKV(natskv.New(js), 0)).Expand(s).
//
// # Running
//
// Run prepares every resource (templates, strict decoding, validation,
// control conditions, provider choice) and checks every reference before the
// first is applied, so an invalid manifest changes nothing. Two resources
// with the same type#name, or a name equal to another's type#alias, are an
// error (ErrDuplicate). Resources then run one at a time in declaration
// order:
//
//   - require: [type#name or type#alias, ...] must name resources declared
//     earlier (else an error wrapping ErrUnknownReference that names the
//     reference). When a required resource failed or was skipped (for any
//     reason, control conditions included), the resource is not applied:
//     its event has Skipped set, UnmetRequirements listing those references
//     and no errors; its provider is never called.
//   - subscribe: [ref, ...] must also name earlier resources. When one of
//     them changed (its event has Changed, failed or not), the engine applies
//     the resource with a refresh: a running service restarts, an exec runs
//     even with creates or refreshonly. A stable subscription never
//     refreshes. Under noop Changed means "would change": the type reports
//     what it would do (its own Changed, Refreshed and noop message) and
//     Run adds "(would refresh: file#/etc/x would change)" to the noop
//     message; nothing claims a change happened.
//   - fail_on_error: after the first failed resource every later one is
//     not applied: its event has Skipped set, no UnmetRequirements and one
//     error "not applied: fail_on_error is set and <ref> failed". A run
//     stopped through its context marks the rest the same way.
//
// The Report holds every event in order and a Summary (total, stable,
// changed, failed, skipped, refreshed, duration) counting, as CCM does,
// only the resources the run reached (not_applied counts the others);
// PostMessage is set only when nothing failed.
//
// # Bundles
//
// NewBundle carries the manifest as JSON plus every file below the relative
// sources of its file and scaffold resources (a templated source carries
// the literal directories before its first template); Bundle.Unpack writes
// them into a fresh directory through an os.Root and parses the manifest
// with that directory as its working directory.
package manifest
