// Package lab boots throw-away Linux hosts on this machine for the real-host
// specs and `make lab`: each host is systemd running as PID 1 in private PID,
// mount, UTS, IPC and cgroup namespaces, on a tmpfs-backed overlay of the
// machine's root, with its own hostname and machine id, and its own copy of
// the machine's package state (/var/lib/dpkg, /var/lib/apt) taken at boot
// under the machine's package locks. The hosts share the machine's network
// namespace, so an agent in a host reaches a broker on loopback.
//
// Enter it with Start, which boots the named hosts and returns a Lab; drive
// a host with Host.Run (a command inside it, through nsenter) and Host.Path
// (its files, seen from outside); set up the project's agent with
// Host.InstallDeb and Host.StartAgent; end it with Lab.Close. Each host has
// a supervisor process that removes the host (every process in its cgroup,
// then the cgroup) when the lab is closed and also when the process that
// started it dies, so a killed test leaves nothing behind. Check says what
// the machine lacks when a lab cannot run here.
package lab
