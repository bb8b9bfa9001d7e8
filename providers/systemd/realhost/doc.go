// Package realhost holds the systemd service provider's real-host specs.
//
// They boot one lab host (internal/lab): a real systemd as PID 1 in private
// namespaces on an overlay of this machine's root, install the project's own
// ccm-fleet .deb in it with dpkg -i, and drive the installed ccm-agent inside
// it (ensure service and apply, with and without --noop) against test units
// written to the host's /etc/systemd/system. Every outcome is checked twice:
// in what the agent reports (its line, its exit code) and in what systemd
// says (is-active, is-enabled, MainPID, ExecStart, NeedDaemonReload).
//
// The package has no code of its own; it is a package so that its suite runs
// in parallel with the others under go test ./... . A machine that cannot
// run lab hosts fails the suite with lab.Check's reason: it is never skipped.
package realhost
