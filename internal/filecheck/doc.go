// Package filecheck owns how the agent reads its own files (configuration,
// policy): a bounded read, and errors whose text is only the problem, so a
// caller's one line names the file once, while errors.Is still finds the
// caller's sentinel and the cause.
package filecheck
