package main

import "github.com/ccm-fleet/ccm/cmd/internal/program"

// examples are shown at the end of each command's --help and as cheats
// (ccm-agent cheat ensure). Every command line here is parsed by a test.
var examples = program.Examples{
	"completion": `
# Print the bash completion script (the ccm-fleet package installs those of
# bash, zsh and fish); for this shell only: source <(ccm-agent completion bash)
ccm-agent completion bash
ccm-agent completion zsh
ccm-agent completion fish
`,
	"version": `
# The version, commit, build date and Go version of this binary
ccm-agent version
`,
	"cheat": `
# Every command's examples, as cheat sheets
ccm-agent cheat --list
ccm-agent cheat ensure
`,
	"agent": `
# Run CCM's continuous agent from /etc/choria/ccm/config.yaml, applying
# obj:// bundles signed by a key the policy trusts
ccm-agent agent --policy /etc/ccm/policy.yaml --server nats://nats.example.com:4222
# Another configuration file, metrics of monitor_port on loopback only
ccm-agent agent --config /etc/ccm/ccm-agent.yaml --monitor-host 127.0.0.1
`,
	"run": `
# Serve the fleet with everything in /etc/ccm/agent.yaml (what ccm-agent.service runs)
ccm-agent run --config /etc/ccm/agent.yaml
# The same with the connection and policy on the command line, JSON logs
ccm-agent run --server nats://nats.example.com:4222 --creds /etc/ccm/agent.creds --policy /etc/ccm/policy.yaml --log-format json
# Custom facts for --where filters
ccm-agent run --config /etc/ccm/agent.yaml --fact role=web --facts-file /etc/ccm/facts.yaml
`,
	"simulate": `
# 100 agents in one process against a lab broker, half debian, half rhel
ccm-agent simulate --count 100 --vary os=debian,rhel --fact role=web --insecure --server nats://127.0.0.1:4222
`,
	"hiera parse": `
# Resolve a data file (data, hierarchy, overrides) with facts given as arguments
ccm-agent hiera parse data.yaml env=prod role=web
# The same as YAML, or as HIERA_KEY=value lines for a shell
ccm-agent hiera parse data.yaml env=prod --yaml
ccm-agent hiera parse data.yaml env=prod --env
# One value, with this host's facts and a facts file
ccm-agent hiera parse data.yaml --facts facts.yaml --query web.listen_port
`,
	"hiera facts": `
# The facts hiera parse resolves with: this host's, the environment's, and arguments
ccm-agent hiera facts -E role=web
ccm-agent hiera facts --query host.info.platformFamily
`,
	"status": `
# The current state of a file, a package or a service, changing nothing
ccm-agent status file /etc/motd
ccm-agent status package zsh --json
ccm-agent status service nginx
`,
	"session new": `
# Start a session for a script (eval its output); later ensure lines record into it
ccm-agent session new
ccm-agent session new --directory /var/tmp/ccm-session
`,
	"session report": `
# Summarise the session, then remove it (only inside the temporary directory)
ccm-agent session report --remove
ccm-agent session report --session /var/tmp/ccm-session
`,
	"apply": `
# What a manifest would change on this host, then apply it
ccm-agent apply site.yaml --noop
ccm-agent apply site.yaml
# The manifest after data and templates are resolved, with a fact overridden
ccm-agent apply site.yaml --render --fact role=web
# Only the resources' health checks; exit 2 when one is not OK
ccm-agent apply site.yaml --monitor-only --detailed-exit-codes
# For CI: exit 5 when something would change, 2 when something failed
ccm-agent apply site.yaml --noop --detailed-exit-codes
`,
	"ensure file": `
# A file with its content, owner, group and mode
ccm-agent ensure file /etc/motd --content "managed by ccm" --owner root --group root --mode 0644
# Would it change, and how? (exit 5 when it would)
ccm-agent ensure file /etc/motd --content "managed by ccm" --owner root --group root --mode 0644 --noop --diff
# Removed, even as a non-empty directory
ccm-agent ensure file /srv/old absent --force
`,
	"ensure exec": `
# Run once: skipped when the file exists
ccm-agent ensure exec "/usr/bin/tar -xzf /tmp/app.tgz -C /opt" --creates /opt/app
# Killed with its children after 30s; exit codes 0 and 2 both mean success
ccm-agent ensure exec "/usr/local/bin/sync-data" --timeout 30s --returns 0 --returns 2 --env LANG=C
`,
	"ensure package": `
ccm-agent ensure package nginx present
ccm-agent ensure package nginx latest --noop
ccm-agent ensure package telnet absent
`,
	"ensure service": `
ccm-agent ensure service nginx running --enable
ccm-agent ensure service apache2 stopped --disable
# Running, and answering: a CRITICAL check (exit 2) fails the resource
ccm-agent ensure service nginx running --check "/usr/lib/nagios/plugins/check_http -H localhost" --check-tries 5 --check-sleep 2s
`,
	"ensure user": `
ccm-agent ensure user deploy --uid 2001 --groups adm --shell /bin/bash
# What would change, naming each attribute ("Would have changed shell /bin/sh to /bin/bash")
ccm-agent ensure user deploy --shell /bin/bash --noop
# Locked; a password hash is read from CCM_USER_PASSWORD (a crypt(3) hash such as openssl passwd -6 makes, never a clear text)
ccm-agent ensure user deploy --lock
ccm-agent ensure user olduser absent --home /home/olduser --manage-home
`,
	"ensure group": `
ccm-agent ensure group deployers --gid 3001 --members deploy,ci
ccm-agent ensure group deployers --members deploy --membership inclusive
`,
	"ensure archive": `
# Download, verify and extract (skipped where /opt/app/bin/app exists)
ccm-agent ensure archive /opt/app.tar.gz --url https://files.example.com/app-1.4.tar.gz --checksum 4f1c3b5e3a9b8d2f0c1e7a6b5d4c3b2a1f0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c --extract-parent /opt/app --creates /opt/app/bin/app --owner root --group root
`,
	"ensure scaffold": `
# Render a template directory into /etc/app, removing files it no longer renders
ccm-agent ensure scaffold /etc/app --source ./templates/app --purge
# CCM's spelling: the source as the second argument
ccm-agent ensure scaffold /etc/app ./templates/app --purge
`,
	"ensure api pipe": `
# CCM's stdin API: apply the io.choria.ccm.v1.resource.ensure.request (JSON or YAML) piped in,
# e.g. {"protocol": "io.choria.ccm.v1.resource.ensure.request", "type": "package", "properties": {"name": "htop"}}
ccm-agent ensure api pipe
# Report what it would change, the response as YAML
ccm-agent ensure api pipe --noop --yaml
# Templates in the request see data.* from a file and a custom fact
ccm-agent ensure api pipe --data data.yaml --fact role=web
`,
	"facts": `
# Every fact of this host, and one by its dotted path
ccm-agent facts
ccm-agent facts host.info.platformFamily
# With a custom fact, as YAML
ccm-agent facts --fact role=web --yaml
`,
}
