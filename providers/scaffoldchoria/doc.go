// Package scaffoldchoria is the choria provider of the scaffold resource
// type. It renders template directories as github.com/choria-io/scaffold
// does (Go text/template plus Sprig, or Jet; _partials, render, write and
// post commands) and removes what a scaffold manages. It renders them
// itself, through the template sandbox of package resources/templates
// (SandboxGo, SandboxJet), not with the library: each file is one render
// with its own budget, which the partials it render()s share, so a file or
// partial that renders itself ends at the depth limit instead of
// overflowing the stack, and Go templates get the sandbox's Sprig (no env,
// expandenv or getHostByName; repeat, until, seq … bounded). The library's
// types (ManagedFile, FileAction) still describe what a render did.
//
// # Template data
//
// Both engines see the facts and data of the request's templates.Env, and a
// lookup(key, default) function over the same Env ("facts.host.name",
// "data.port"):
//
//   - go: the template's dot is a map with the keys facts and data, so
//     templates write {{ .facts.hostname }} and {{ .data.port }}; partials
//     are rendered with {{ render "_partials/x.conf" . }}.
//   - jet: facts and data are Jet variables, so templates write
//     [[ facts.hostname ]] and [[ data.port ]]. The dot is the variable map
//     itself; pass it on as [[ render("_partials/x.conf", .) ]] so the
//     partial sees the same variables. Jet's dot cannot be indexed as
//     .facts: use the variables.
//
// Jet's default delimiters are [[ and ]] and Go's are {{ and }};
// left_delimiter and right_delimiter replace them. Files under _partials are
// never rendered into the target. write("name", "content") adds a file to the
// target from inside a template.
//
// # What runs
//
// Every render, the dry run that Status does included, first renders the
// whole tree into a private temporary directory and runs the post commands
// there, on those temporary copies: post commands therefore also run under
// noop, but never on files in the target. The renderer writes by path, so it
// only ever writes below a private directory (root's, mode 0700); this
// provider then compares that tree with the target and, on a real render,
// copies only files whose content differs into the target, atomically,
// with the mode the temporary copy ended with (so "*.sh": "chmod +x {}"
// gives new and updated scripts mode 0755). Every access to the target goes
// through directory handles (providers/internal/safefs): the target is
// opened from "/" following only links root or the agent's user owns, its
// subdirectories with O_NOFOLLOW, and each file is written to a temporary
// file created in its directory's handle and renamed within it, so a
// directory swapped for a link mid-render is refused, never followed. With
// purge, files in the target that the source does not render are deleted
// afterwards, through the same handles.
//
// The renderer reads by path too, so it never reads the source itself: the
// source is first copied into the private directory through handles (the
// source reached from "/" following only links root or the agent's user
// owns, below it directories and regular files only, each opened with
// O_NOFOLLOW; a link, device or FIFO below it is an error, and so is more
// than MaxSourceEntries entries or MaxSourceBytes bytes), and the renderer
// renders that copy. What a scope judged is what is rendered.
//
// A post command is split like a shell would split it (no shell runs it),
// {} is replaced by the file's path or the path is appended, and it runs
// with the agent's environment and working directory. It is run without a
// context, as the library ran it, so each command is started through coreutils
// timeout(1) when that is installed: it is killed (its process group, TERM
// then KILL) after the time left on ctx, or DefaultPostTimeout when ctx has
// no deadline; a killed command fails the render with exit status 124. A
// command's combined output is kept in memory; this provider cuts it
// to MaxErrorBytes in the error it returns.
//
// # Removal
//
// Remove deletes only files the scaffold manages (the state's Changed and
// Stable lists), then directories that became empty, deepest first, and at
// last the target itself when nothing else is left in it.
package scaffoldchoria
