// Package bench measures CCM Fleet against the raw NATS floor: for each
// fleet size it starts an embedded broker, plain nats.go responders (the
// floor) and simulated agents (ccm-agent simulate, a child process), and
// times fleet noop and change runs through the orchestrator library and the
// ccm-orch binary, with the orchestrator's and the agents' memory and CPU.
// It also times discovery from large node registries, history writes and
// reads, single request latency and a cold ccm-agent ensure.
//
// Run is what `ccm-bench` (and `ccm-orch bench`, which runs it, and `make
// bench`) call; Responders is the floor's child process (`ccm-bench
// responders`). A benchmark reports
// numbers, it never fails on them.
package bench
