package sources

import "errors"

// ErrSource is wrapped by every error parsing a source reference.
var ErrSource = errors.New("invalid manifest source")

// ErrBundle is wrapped when a bundle cannot be unpacked: not a gzip tar
// archive, too large, too many entries, an entry that is not a plain file
// or directory, a path leaving the bundle, or no manifest.yaml.
var ErrBundle = errors.New("invalid manifest bundle")

// ErrFetch is wrapped when a remote source cannot be read.
var ErrFetch = errors.New("manifest source could not be fetched")

// ErrUnsigned is wrapped when a bundle carries no signature and nothing
// else (a checksum pinned by the agent's configuration) vouches for it.
var ErrUnsigned = errors.New("bundle is not signed")

// ErrBadSignature is wrapped when a bundle's signature does not verify:
// malformed, made by another key, over other bytes, or naming another
// bundle.
var ErrBadSignature = errors.New("bundle signature does not verify")

// ErrChecksum is wrapped when a bundle's bytes do not have the SHA-256
// digest its source is pinned to.
var ErrChecksum = errors.New("bundle checksum does not match its pin")
