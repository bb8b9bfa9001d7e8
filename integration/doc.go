// Package integration holds end-to-end suites: the real ccm-orch binary
// against an embedded NATS server and many simulated agents, driven the way
// an operator would. make test runs them.
package integration
