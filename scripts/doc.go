// Package scripts holds the shell scripts behind make targets (demo.sh,
// fuzz-smoke.sh) and the specs that run them the way an operator does: the
// demo against freshly built binaries, with its ports, temporary directory
// and child processes checked after it exits.
package scripts
