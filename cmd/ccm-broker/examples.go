package main

import "github.com/ccm-fleet/ccm/cmd/internal/program"

// examples are shown at the end of each command's --help and as cheats
// (ccm-broker cheat run). Every command line here is parsed by a test.
var examples = program.Examples{
	"completion": `
# Print the bash completion script (the ccm-fleet package installs those of
# bash, zsh and fish); for this shell only: source <(ccm-broker completion bash)
ccm-broker completion bash
ccm-broker completion zsh
ccm-broker completion fish
`,
	"version": `
# The version, commit, build date and Go version of this binary
ccm-broker version
`,
	"cheat": `
# Every command's examples, as cheat sheets
ccm-broker cheat --list
ccm-broker cheat run
`,
	"run": `
# A lab broker on this host, its JetStream store kept across restarts (ccm-orch broker ... runs the same)
ccm-broker --listen 0.0.0.0:4222 --store /var/lib/ccm-broker
# One of a cluster of three (run the same on the others with their own --name)
ccm-broker --name b1 --store /var/lib/ccm-broker --cluster-listen 10.0.0.1:6222 --routes nats-route://10.0.0.1:6222,nats-route://10.0.0.2:6222,nats-route://10.0.0.3:6222
# Cap the store and require client certificates
ccm-broker run --store /var/lib/ccm-broker --max-store 20GiB --tlscert server.pem --tlskey server-key.pem --tlsca ca.pem --tls-verify
# A hub broker (leaf users, TLS and sites in the file; as in dist/broker-hub.yaml)
ccm-broker --config /etc/ccm/broker.yaml
# The site broker of site fra1, a leaf node of the hub with JetStream domain fra1 (hub credentials in the file)
ccm-broker --config /etc/ccm/broker.yaml --site fra1 --hub-url nats-leaf://hub1.example.com:7422,nats-leaf://hub2.example.com:7422
`,
}
