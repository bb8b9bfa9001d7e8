// Package packaging builds the ccm-fleet .deb and .rpm packages with nFPM
// (github.com/goreleaser/nfpm/v2, used as a library): it cross-compiles
// ccm-agent and ccm-orch for each architecture with the version stamped in,
// runs them to generate their manual pages and bash, zsh and fish
// completion scripts, and packs all that with the systemd units, the
// configuration, the licence and the maintainer scripts from dist/ (the
// Debian and RPM scripts differ: each follows its distribution's
// conventions for stopping, restarting and cleaning up units).
// `make package` runs it through dist/packager; nothing here is linked into
// ccm-agent or ccm-orch.
package packaging
