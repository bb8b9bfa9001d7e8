// Package nolinks opens a directory in one system call when no component
// of its path is a symbolic link: openat2 with RESOLVE_NO_SYMLINKS, which
// the kernel refuses (ELOOP) at the first link, /proc's "magic" ones
// included. It is the common case of the project's two path walkers, the
// file providers' safefs and the policy's path checks: each walks a path
// one component at a time to judge its links, and with no link on the way
// the kernel's answer is the walk's. Anything OpenDir cannot answer (a
// link, a missing or non-directory component, a kernel without openat2)
// is left to the caller's walk.
package nolinks
