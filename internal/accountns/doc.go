// Package accountns runs a test binary where it may create and remove
// real accounts without touching the machine's: in a private mount
// namespace (unshare --mount --propagation private) with throw-away
// overlays, their upper layers on a tmpfs, over /etc, /home, /var/log and
// /var/mail. The shadow tools (useradd, usermod, chpasswd, groupadd, ...)
// then write the overlays only, and everything of them goes with the
// namespace's last process. The parent checks afterwards that the
// machine's account files are byte-identical to what they were, and fails
// the run when they are not. It needs root; without it the run fails and
// says so, never skips.
package accountns
