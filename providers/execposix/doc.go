// Package execposix holds the two exec providers: posix, the default, which
// splits the command line into words with shell-like quoting and runs the
// first word directly (no shell, so no pipes, redirections or $VAR
// expansion), and shell, used only when a resource says provider: shell,
// which hands the whole line to /bin/sh -c.
//
// Both run commands through a runner.Runner, so the timeout kills every
// process the command started (see package runner) and captured output is
// bounded, and both report status the same way: ensure present, and whether
// the creates file exists. Deciding whether to run at all is the exec type's
// job (resources/exectype).
package execposix
