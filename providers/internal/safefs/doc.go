// Package safefs changes files through directory handles, so that a path
// checked once cannot be redirected before it is used. It is what the file,
// archive and scaffold providers share.
//
// Open and MkdirAll walk an absolute path from "/" one component at a time,
// each opened with O_PATH|O_NOFOLLOW relative to the handle of the one
// before. A symbolic link met on the way is followed only when root or this
// process's user owns it (the rule the kernel's protected_symlinks applies
// in shared directories): its target is read from the link's own descriptor
// (readlinkat) and the walk goes on from there, never by path. A link any
// other user owns stops the walk with an error wrapping filetype.ErrSymlink
// that names the path and the link. A path with no link at all, the common
// case, is opened in one openat2 call with RESOLVE_NO_SYMLINKS, the same
// directory the walk would reach (a link, a missing component or a kernel
// without openat2 sends it to the walk). The result is a Dir, and every
// operation on a Dir (open, create, rename, remove, mkdir, link, stat) takes
// one name relative to it and never follows a link in that name: a
// directory swapped for a link after the walk changes nothing, because the
// walk is over and the handle still points at the directory it checked.
// Sub descends from a Dir through names that must all be directories (no
// link at all), for trees such as an extraction directory.
package safefs
