// Package templates evaluates the expressions that resources carry:
// templates inside string properties, written {{ expr }} or ${ expr } (CCM
// accepts both), and the boolean conditions of control.if and
// control.unless.
//
// Expressions use the expr language over an Env. Its variables are facts and
// data, also spelt Facts and Data as in CCM (below the gathered fact trees
// Facts also answers to gopsutil's Go field names: Facts.host.info.Hostname),
// and, only when the caller exposes them, environ/Environ. Its functions are
// lookup(key, default) over dotted paths (a "#" segment gives a list's
// length), file()/readFile(), template() and jet() (both may read files, so
// they need WithFiles for .templ and .jet names), and kvGet(bucket, key)
// when WithKV gives a store (package natskv reads NATS JetStream buckets).
// A request that arrives over the network gets an Env with facts and data
// only, so it can read neither the agent's environment nor its files.
//
// A template whose expression gives nothing (a key that does not exist,
// read as Facts.x.y) is an error wrapping ErrMissingKey, never an empty
// string; only an Env built WithMissingEmpty (hierarchy order entries)
// treats a missing key as "".
//
// # The template sandbox
//
// Every template engine renders through this package with one function set
// and one Budget per render, shared by the renders nested in it: the
// expressions (Expand, Eval …), jet() and template() (RenderJetTo, which
// resources_jet_file uses too), and the Go and Jet engines of scaffolds
// (SandboxGo, SandboxJet). A Budget bounds the depth of nested renders
// (MaxRenderDepth: template(), jet(), a scaffold's render()), the bytes
// written (MaxRenderOutput), the bytes of values functions and Jet's + build
// (MaxRenderValues), the steps (MaxRenderSteps: range iterations, each range
// charging its length, function and block calls) and the time
// (MaxRenderTime); a template's brackets may nest MaxTemplateNesting deep.
// Passing a limit is an error wrapping ErrLimit (a *LimitError naming it),
// and every later charge fails too, so a template cannot catch it.
//
// Recursion is refused before rendering, since a stack overflow cannot be
// recovered: Jet blocks that yield themselves or each other in a cycle, Go
// templates that call themselves, Jet's include, import and extends (the
// loader holds no template) and try (it buffers output where no limit sees
// it). Refused functions (ErrSandbox): Sprig's env, expandenv and
// getHostByName, Jet's exec and includeIfExists. Functions that allocate by
// an argument (repeat, until, untilStep, seq, indent, rand*, replace, join,
// ints …) charge what they build before building it. To charge a range, a
// block call and a + the sandbox rewrites the parsed template (calls to
// ccm_sandbox_* functions, names a template may not use). A panic in an
// engine's own code is an error wrapping ErrEngine.
package templates
