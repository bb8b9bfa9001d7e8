// Package dnf is the dnf provider of the package type, for RHEL, Fedora and
// their derivatives. It reads package state with rpm -q, installs with dnf
// install, upgrades to latest with dnf upgrade and to a version with dnf
// install, downgrades with dnf downgrade and removes with dnf remove, one
// command at a time under a lock shared by every package provider of the
// process. Versions compare as rpm orders them (VersionCmp, version.go),
// which a spec checks against the real rpm's own verdict.
package dnf
