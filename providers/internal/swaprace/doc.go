// Package swaprace is a test helper, used only by tests: it runs the attack
// that directory handles defend against. An unprivileged helper process (the
// test binary itself, re-executed as uid and gid 65534) exchanges a real
// directory and a symbolic link to a root-only directory in a loop with
// renameat2(RENAME_EXCHANGE), while the test makes root-owned writes under
// the swapped name. Tests call MaybeRunHelper first thing in TestMain, and
// Start to begin a race.
package swaprace
