// Package scaffoldtype is the scaffold resource type: it renders a directory
// of templates (the source) into a target directory (the resource name) and
// keeps that target in step with the source.
//
// The package owns the scaffold properties and their validation, the
// resolution of a relative source against the request's working directory,
// the idempotency decision (is the target already in its desired state?),
// the noop report ("Would have changed N scaffold files", "Would have
// removed N scaffold files") and the Provider interface that renderers
// implement. It never touches the filesystem itself: Apply asks the provider
// for the current state (a dry-run render), decides from that state, and
// calls Provider.Scaffold or Provider.Remove.
//
// # Decisions
//
// With ensure: present the target is in its desired state when it exists, no
// rendered file would be added or updated (Changed is empty) and, only when
// purge is set, no file outside the scaffold remains (Purged is empty).
// With ensure: absent it is in its desired state when the target does not
// exist or none of the files the scaffold manages remain on disk; files that
// do not belong to the scaffold never matter for absent.
//
// # Sources
//
// A relative source is joined to ApplyContext.WorkingDir (or, when the
// request has none, made absolute against the process's working directory).
// A source with a URL scheme is passed through unchanged; whether it can be
// used is the provider's concern (the choria provider accepts only local
// directories).
package scaffoldtype
