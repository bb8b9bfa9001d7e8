// Package applytype is the apply resource type: a resource that runs a
// child manifest, named by its path relative to the parent manifest's
// directory, with extra data for it, in noop or health-check mode when
// either the parent run or the resource asks (never weaker than the
// parent), optionally refusing child manifests that hold apply resources
// themselves. It owns the properties and their validation; running the
// child is the manifest package's work, so outside a manifest (an ensure
// request, the command line) an apply resource fails with ErrManifestOnly.
package applytype
