// Package grouptype is the group resource type: a local group with its gid
// and members, present (the default) or absent.
//
// The package owns the group properties and their validation (account
// names are limited to a safe character set so they can never be read as
// options, and the names and membership rules the user type shares), the
// apply logic (read the group as the system does, refuse a gid another
// group holds before changing anything, create, change the gid, add or set
// the members, remove), the noop messages, and the Provider interface that
// group providers such as providers/groupadd implement.
package grouptype
