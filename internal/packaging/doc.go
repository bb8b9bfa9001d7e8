// Package packaging builds the ccm-fleet .deb and .rpm packages with nFPM
// (github.com/goreleaser/nfpm/v2, used as a library): it cross-compiles
// ccm-agent and ccm-orch for each architecture with the version stamped in,
// and packs them with the systemd units, the configuration and the
// maintainer scripts from dist/. `make package` runs it through
// dist/packager; nothing here is linked into ccm-agent or ccm-orch.
package packaging
