package main

import "github.com/ccm-fleet/ccm/cmd/internal/program"

// examples are shown at the end of each command's --help and as cheats
// (ccm-bench cheat run). Every command line here is parsed by a test.
var examples = program.Examples{
	"completion": `
# Print the bash completion script (the ccm-fleet package installs those of
# bash, zsh and fish); for this shell only: source <(ccm-bench completion bash)
ccm-bench completion bash
ccm-bench completion zsh
ccm-bench completion fish
`,
	"version": `
# The version, commit, build date and Go version of this binary
ccm-bench version
`,
	"cheat": `
# Every command's examples, as cheat sheets
ccm-bench cheat --list
ccm-bench cheat run
`,
	"run": `
# The benchmark table for 1,000 simulated agents (ccm-orch bench ... runs the same)
ccm-bench --agents 1000 --rounds 5
# Only the noop and floor rows, with CPU profiles
ccm-bench --agents 100,1000 --rows noop,floor --profile-dir /tmp/prof
# A fleet change against both floors: plain NATS, and signed both ways
ccm-bench --agents 200 --rows floor,floor-signed,change
# 2,000 agents over 4 sites (leaf nodes of a hub), against the same fleet on one cluster
ccm-bench --agents 2000 --sites 4 --rows floor,floor-signed,noop,noop-sites
# Time another ccm-orch build in the -cli rows, writing the rows as JSON
ccm-bench run --agents 1000 --rows noop-cli --orch-bin /tmp/old/ccm-orch --out /tmp/old.json
`,
}
