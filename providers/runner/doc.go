// Package runner starts the external commands providers need: with a
// deadline that kills the whole process group, an explicit environment and
// working directory, and bounded capture of output. Fake is a scripted
// Runner for tests that checks the exact argv of every call.
package runner
