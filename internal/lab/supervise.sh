#!/bin/bash
# The supervisor of one lab host. It moves a child into the host's cgroup,
# which execs unshare and so boot.sh and systemd; prints the child's pid;
# then waits for its standard input to close. That happens when the lab is
# stopped and also when the process that started the lab dies in any way,
# SIGKILL included: either way it kills every process left in the host's
# cgroup, waits for the cgroup to empty and removes it.
set -uo pipefail
cg=$1
name=$2
scratch=$3
boot=$4
pkgstate=$5

(
	echo "$BASHPID" >"$cg/cgroup.procs"
	exec unshare --pid --fork --kill-child=SIGKILL --mount --uts --ipc --cgroup \
		/bin/bash "$boot" "$name" "$scratch" "$pkgstate"
) </dev/null &
echo "unshare $!"
# From here on the owner may be gone, and with it the reader of these
# pipes: writing to them would kill this script before it cleaned up.
exec >/dev/null 2>&1
trap '' PIPE

cat

echo 1 >"$cg/cgroup.kill" 2>/dev/null
for _ in $(seq 1 100); do
	grep -q '^populated 0' "$cg/cgroup.events" 2>/dev/null && break
	sleep 0.1
done
wait
find "$cg" -depth -type d -exec rmdir {} + 2>/dev/null
rmdir "$scratch" 2>/dev/null
# The last host of a lab whose owner is gone removes the lab's cgroup and
# its scratch directory (these scripts) too.
if rmdir "$(dirname "$cg")" 2>/dev/null; then
	rm -rf "$(dirname "$scratch")"
fi
[ ! -d "$cg" ]
