// Package fileposix is the posix provider of the file resource type: it
// reads and changes files and directories on Unix-like hosts with the
// system calls directly (no external commands).
//
// Files are written atomically: a temporary file in the target's directory
// gets its mode, content and owner, is synced and renamed over the target,
// and the directory is synced. Symbolic links at a managed path are never
// followed: Status reports them as such, and Store, CreateDirectory and
// SetAttributes refuse them (attributes are changed through a descriptor
// opened with O_NOFOLLOW). The provider is always manageable, priority 1.
package fileposix
