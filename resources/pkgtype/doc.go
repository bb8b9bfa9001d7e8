// Package pkgtype is the package resource type: it validates a package
// resource's properties (name and version strings are checked before any
// process starts), decides between install, upgrade, downgrade, uninstall
// and no change from the current state its provider reports, acts (or under
// noop only says what it would do), and verifies the desired state was
// reached.
//
// It declares Provider, the interface package managers implement (apt and
// dnf live in providers/apt and providers/dnf); it knows no platform tool.
package pkgtype
