// Package sources owns where the continuous agent's manifests come from:
// a source reference (a local manifest file, obj://bucket/key in a
// JetStream object store, or an http(s) URL of a tarball), fetching a
// bundle with bounded sizes, unpacking it safely below a cache directory,
// and the signature a bundle carries (made by "ccm-orch manifest put",
// checked by the agent against its policy before anything is applied).
//
// A bundle is a gzip-compressed tar archive holding manifest.yaml at its
// root beside the templates and file sources the manifest names, the layout
// CCM uses. Its signature is over a short statement naming the bundle, the
// SHA-256 digest of the exact archive bytes and the time it was made; the
// statement's fields travel in object metadata or HTTP response headers.
package sources
