// Package fileposix is the posix provider of the file resource type: it
// reads and changes files and directories on Unix-like hosts with the
// system calls directly (no external commands).
//
// Every operation goes through directory handles (providers/internal/safefs):
// the parent of the managed path is opened from "/" one component at a time
// with O_NOFOLLOW, following a symbolic link on the way only when root or
// the agent's own user owns it (a link another user planted, say in /tmp,
// is refused with filetype.ErrSymlink). The file itself is then looked at,
// created, renamed, chowned, chmodded and removed relative to that handle,
// never by re-resolving the path, so a directory swapped for a link between
// the check and the write cannot redirect it. For one apply of the file
// type the parent is opened once (Bind, the handle held in the apply's
// context): the status, the diff's read, the write and the status after it
// share the handle.
//
// Files are written atomically: a temporary file created in the parent's
// handle with O_CREAT|O_EXCL|O_NOFOLLOW gets its mode, content and owner
// through its descriptor, is synced and renamed over the target within the
// same handle (the directory itself is not synced: see Store). Symbolic
// links at a managed path are never followed: Status reports them as such,
// and Store, CreateDirectory and SetAttributes refuse them. The provider is
// always manageable, priority 1.
package fileposix
