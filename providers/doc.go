// Package providers holds how resources are managed on a platform, one
// sub-package per provider (fileposix, execposix, apt, dnf, systemd,
// archivehttp, scaffoldchoria), the command runner they share, and Builtin:
// the one visible table that wires every type and provider into a
// resources.Registry.
package providers
