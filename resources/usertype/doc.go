// Package usertype is the user resource type: a local account with its
// uid, primary and supplementary groups, home, shell, comment, password
// hash, expiry and lock, present (the default) or absent.
//
// The package owns the user properties and their validation (names as the
// group type checks them, paths and texts that cannot break an account
// file's fields, a password that must be a crypt(3) hash), the apply logic
// (read the account as the system does, refuse a uid another user holds
// before changing anything, create or change each attribute that differs,
// remove), the noop messages, and the Provider interface that user
// providers such as providers/useradd implement. A user with a password
// is always sensitive: the engine keeps the hash out of every record
// (see Properties.Secrets).
package usertype
