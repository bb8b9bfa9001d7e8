// Package runner starts the external commands providers need: with a
// deadline, an explicit environment and working directory, and bounded
// capture of output. Fake is a scripted Runner for tests that checks the
// exact argv of every call.
//
// # No escaping processes
//
// A command's processes do not outlive it: when it times out, when ctx is
// done (the agent stopping cancels running jobs) and when it ends normally,
// every process it started is killed, including ones that called setsid or
// double-forked. A resource's background processes therefore end with the
// command that started them; services are started through systemctl, so
// systemd, not the command, is their parent.
//
// Exec.Run gives every command its own process group, SIGKILL as parent-death
// signal (an agent killed with SIGKILL takes its direct children down) and
// the marker MarkerEnv=<instance>.<agent pid>.<agent start>.<n>, inherited by
// descendants. Its output goes to pipes the runner reads, so a background
// process holding them cannot delay the result.
//
// With a Supervisor (NewSupervisor, once per process; ccm-agent makes one for
// run, simulate, ensure and apply) containment uses, best first:
//
//   - MechanismCgroup: where cgroup v2 is mounted (/sys/fs/cgroup, or
//     /sys/fs/cgroup/unified on hybrid hosts), cgroup.kill exists (Linux 5.14)
//     and a child cgroup can be made below this process's own cgroup (read
//     from /proc/self/cgroup): <own>/ccm-exec.<instance>/<agent>.<n> per
//     command. The child is started inside it by clone3 CLONE_INTO_CGROUP
//     (SysProcAttr.UseCgroupFD), so no fork can race the move; the end is one
//     write to cgroup.kill, then the cgroup is removed. Nothing but a root
//     process moving itself to another cgroup escapes. Under systemd, give the
//     unit Delegate=yes: without it systemd owns the subtree and may clean
//     it up, though it also kills the whole unit cgroup when the unit stops.
//     When the cgroup cannot be made the supervisor logs once and uses:
//   - MechanismSubreaper: this process becomes child subreaper
//     (PR_SET_CHILD_SUBREAPER), so orphans reparent to it rather than to
//     init. While commands run, one scan of /proc every 100ms, for all of
//     them, looks up their descendants (parent links, start time to tell
//     reused pids apart); orphans that reparent here are owned by the
//     commands running when they were first seen and killed with the last of
//     them. At a command's end, the processes that carry its marker are
//     looked for among the re-parented ones only (parent this process or
//     init): whatever else is its own is below one of its roots. To kill,
//     processes are stopped
//     (SIGSTOP, so they cannot fork) round by round until no new one appears
//     (bounded), then killed, each through a pidfd opened after checking its
//     start time. The supervisor reaps those orphans' zombies: it waits only
//     for zombie children that are not Exec's own children and not in this
//     process's process group, so children other code starts with os/exec
//     keep their exit status.
//
// KillLeftovers, called once at start, kills what an agent of the same
// instance left running when it died mid-command: every process in one of
// its exec cgroups, and every process carrying its marker, with their
// descendants. Only agents no longer running count (pid and start time), and
// nothing without the marker or outside those cgroups is touched. A marker's
// pid is one of its agent's PID namespace, so only processes of this
// agent's own PID namespace are judged by their marker: an agent in a
// container on the same machine keeps its commands.
//
// What each fallback cannot catch:
//
//   - Without cgroups, a process that double-forks, calls setsid and clears
//     its environment within 100ms of starting, while another command runs,
//     is killed with the last of those commands rather than its own; one that
//     joins this process's own process group is not reaped by the supervisor.
//   - Without cgroups, KillLeftovers cannot find a process of a dead agent
//     that cleared its environment and left the agent's tree (setsid, double
//     fork): nothing left on the host links it to the agent.
//   - Exec without a Supervisor is not a subreaper: an orphan that cleared
//     its environment before it was seen goes to init and escapes.
//   - The parent-death signal fires when the OS thread that started the child
//     exits; Go keeps threads unless a goroutine locked to one ends, so in
//     practice it fires when the agent dies.
//   - Processes started through another service manager (systemctl start)
//     belong to it by design.
package runner
