// Package systemd is the systemd provider of the service resource type: it
// implements servicetype.Provider with systemctl, always for system units
// (--system) and always with "--" before the unit name.
//
// Status maps the stdout of systemctl is-active and is-enabled (not their
// exit codes, which are non-zero for a stopped or disabled unit) to the
// running and enabled state. Each provider instance runs systemctl
// daemon-reload once, before its first operation, so unit files written
// earlier in the same run are seen; after that, Status asks systemd whether
// the unit's files changed on disk since (systemctl show
// --property=NeedDaemonReload) and reloads again when they did, so a unit
// rewritten by a file resource later in the run is started or restarted as
// it now is. Every systemctl call of every provider made by one Factory is
// serialised by the factory's lock.
//
// The Factory offers the provider when systemctl is in PATH, with priority 1.
package systemd
