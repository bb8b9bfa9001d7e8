package main

import "github.com/ccm-fleet/ccm/cmd/internal/program"

// examples are shown at the end of each command's --help and as cheats
// (ccm-orch cheat ensure). Every command line here is parsed by a test.
var examples = program.Examples{
	"completion": `
# Print the bash completion script (the ccm-fleet package installs those of
# bash, zsh and fish); for this shell only: source <(ccm-orch completion bash)
ccm-orch completion bash
ccm-orch completion zsh
ccm-orch completion fish
`,
	"version": `
# The version, commit, build date and Go version of this binary
ccm-orch version
`,
	"cheat": `
# Every command's examples, as cheat sheets
ccm-orch cheat --list
ccm-orch cheat ensure
# Save them for the cheat tool
ccm-orch cheat --save /tmp/cheats
`,
	"broker": `
# The broker's own flags and examples: ccm-orch broker runs ccm-broker with the same arguments
ccm-orch broker --help
`,
	"discover": `
# Every host, with its key facts
ccm-orch discover
# The Debian 12 web servers, as JSON
ccm-orch discover --where os=debian --where 'platform_version>=12' --where role=web --json
# Hosts by identity or /regex/, asking every agent rather than the registry
ccm-orch discover --host web1 --host '/^db[0-9]+$/' --discovery broadcast
# The hosts a file lists that are web servers, with their kernel and site columns
ccm-orch discover --hosts-file hosts.txt --where role=web --fact kernel --fact site
# The same 10 random web servers every time (--seed); without --seed the seed used is printed
ccm-orch discover --where role=web --sample 10 --seed 42
`,
	"facts": `
# How the operating systems spread across the fleet, the most common first
ccm-orch facts os
# The platform versions of the web servers, as YAML with the hosts of each value
ccm-orch facts platform_version --where role=web --yaml
`,
	"ensure file": `
# The same motd on every Debian host, audited first (exit 5 on drift), then applied
ccm-orch ensure file /etc/motd --content "managed by ccm" --owner root --group root --mode 0644 --where os=debian --noop --key ops.seed
ccm-orch ensure file /etc/motd --content "managed by ccm" --owner root --group root --mode 0644 --where os=debian --key ops.seed
# A directory, 10 hosts at a time, stopping after 3 failures
ccm-orch ensure file /srv/app directory --owner app --group app --mode 0755 --batch 10 --max-failures 3 --key ops.seed
# Content templated from each host's facts
ccm-orch ensure file /etc/app/host.conf --content "name={{ lookup('facts.identity') }}" --owner root --group root --mode 0644 --key ops.seed
`,
	"ensure exec": `
# Run a command once: --creates makes it idempotent
ccm-orch ensure exec "/usr/bin/tar -xzf /tmp/app.tgz -C /opt" --creates /opt/app --where role=app --key ops.seed
# The command's own timeout is --timeout; how long hosts have to reply is --reply-timeout
ccm-orch ensure exec "/usr/local/bin/backup" --timeout 10m --reply-timeout 11m --host db1 --key ops.seed
# Run only where a guard command succeeds, printing each host's reply as a JSON line
ccm-orch ensure exec "/usr/sbin/nginx -s reload" --onlyif "/usr/sbin/nginx -t" --where role=web --jsonl --key ops.seed
# Try it on 5% of the web servers first, then rerun it on the hosts where it failed
ccm-orch ensure exec "/usr/local/bin/rotate-keys" --where role=web --sample 5% --key ops.seed
ccm-orch ensure exec "/usr/local/bin/rotate-keys" --hosts-from 0123456789abcdefghij --outcome failed --key ops.seed
`,
	"ensure package": `
# nginx installed everywhere it runs
ccm-orch ensure package nginx present --where role=web --key ops.seed
# A pinned version, audited without changing anything
ccm-orch ensure package openssl 3.0.15-1~deb12u1 --where os=debian --noop --key ops.seed
# Removed
ccm-orch ensure package telnet absent --key ops.seed
`,
	"ensure service": `
# Running and enabled at boot on the web servers
ccm-orch ensure service nginx running --enable --where role=web --key ops.seed
# Stopped, a quarter of the hosts at a time with a pause between hosts
ccm-orch ensure service apache2 stopped --disable --batch 25% --batch-sleep 2s --key ops.seed
`,
	"ensure archive": `
# Download, verify and extract a release (skipped where /opt/app/bin/app exists)
ccm-orch ensure archive /opt/app.tar.gz --url https://files.example.com/app-1.4.tar.gz --checksum 4f1c3b5e3a9b8d2f0c1e7a6b5d4c3b2a1f0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c --extract-parent /opt/app --creates /opt/app/bin/app --owner root --group root --key ops.seed
`,
	"ensure scaffold": `
# Render a template directory into /etc/app on every app host, removing files it no longer renders
ccm-orch ensure scaffold /etc/app --source ./templates/app --purge --where role=app --key ops.seed
`,
	"ensure user": `
# The deploy account on every web server: uid, supplementary group, shell
ccm-orch ensure user deploy --uid 2001 --groups adm --shell /bin/bash --where role=web --key ops.seed
# Audited first: which hosts would change, and how (a noop names each attribute)
ccm-orch ensure user deploy --uid 2001 --groups adm,sudo --membership inclusive --where role=web --noop --key ops.seed
# A password hash read from CCM_USER_PASSWORD (a crypt(3) hash, never a clear text; kept out of every record) and an expiry
ccm-orch ensure user contractor --expiry 2027-03-31 --home /home/contractor --manage-home --key ops.seed
# Locked, then removed with its home
ccm-orch ensure user olduser --lock --key ops.seed
ccm-orch ensure user olduser absent --home /home/olduser --manage-home --key ops.seed
`,
	"ensure group": `
# The deployers group with a fixed gid and at least these members
ccm-orch ensure group deployers --gid 3001 --members deploy,ci --where role=web --key ops.seed
# Exactly these members, nobody else
ccm-orch ensure group deployers --members deploy --membership inclusive --key ops.seed
ccm-orch ensure group oldteam absent --key ops.seed
`,
	"ensure request": `
# A CCM request file (what ccm ensure api pipe reads) on every web host, audited first
ccm-orch ensure --request motd.json --where role=web --noop --key ops.seed
ccm-orch ensure --request motd.json --where role=web --key ops.seed
# The request document on stdin, 10 hosts at a time
ccm-orch ensure --request - --batch 10 --key ops.seed
`,
	"apply": `
# What would change (exit 5 on drift), then apply it, 10% of the hosts at a time
ccm-orch apply site.yaml --where role=web --noop --key ops.seed
ccm-orch apply site.yaml --where role=web --batch 10% --max-failures 2 --key ops.seed
# Send and return at once; read the replies later with ccm-orch history show ID
ccm-orch apply site.yaml --async --key ops.seed
`,
	"audit": `
# Which hosts drifted from the manifest, per resource, changing nothing
ccm-orch audit site.yaml --key audit.seed
# As one JSON document, for a compliance report
ccm-orch audit site.yaml --where os=debian --json --key audit.seed
# How each host drifted: content diffs, hosts with the same diff grouped
ccm-orch audit site.yaml --diff --key audit.seed
`,
	"manifest put": `
# Sign the bundle of ./web (manifest.yaml, templates, files) and store it where
# CCM agents with obj://ccm-manifests/web.tar.gz in their manifests apply it
ccm-orch manifest put ./web obj://ccm-manifests/web.tar.gz --key ops.seed
`,
	"assign": `
# nginx kept in place on every web server: applied at once, then every 30 minutes
ccm-orch assign web site.yaml --where role=web --key ops.seed
# A scheduled audit of the database hosts every hour, spread over 10 minutes
ccm-orch assign db-audit site.yaml --where role=db --interval 1h --splay 10m --noop --key audit.seed
# Two hosts, with data of their own merged over the manifest's
ccm-orch assign canary site.yaml --host web1 --host web2 --data canary.yaml --key ops.seed
# A signed bundle in the object store (ccm-orch manifest put) instead of a manifest file
ccm-orch assign web --bundle obj://ccm-manifests/web.tar.gz --where role=web --key ops.seed
`,
	"assignments list": `
# Every assignment with its revision, selector and schedule
ccm-orch assignments list
ccm-orch assignments list --json
`,
	"assignments show": `
# The current revision, an older one, and every revision kept
ccm-orch assignments show web
ccm-orch assignments show web --revision 3 --json
ccm-orch assignments show web --history
`,
	"assignments rm": `
# Agents stop applying it; what it made stays
ccm-orch assignments rm canary
`,
	"status": `
# Every assignment on every host it selects (exit 0 converged, 5 drift or stale, 2 failed)
ccm-orch status
# One assignment on the Debian hosts, as JSON
ccm-orch status --assignment web --where os=debian --json
`,
	"history init": `
# Create the history stream and the node registry on an existing NATS (once)
ccm-orch history init --server nats://nats.example.com:4222 --replicas 3 --max-age 90d
`,
	"history list": `
# Requests of the last 24 hours
ccm-orch history list
# The last 50 requests that involved web1 this week
ccm-orch history list --since 7d --host web1 --limit 50
`,
	"history show": `
# A request's report rebuilt from history, late replies included, with the diffs it found
ccm-orch history show 0123456789abcdefghij --diff
ccm-orch history show 0123456789abcdefghij --json
`,
	"history host": `
# One host's timeline of results this week
ccm-orch history host web1 --since 7d
`,
	"bench": `
# The benchmark's own flags and examples: ccm-orch bench runs ccm-bench (make build) with the same arguments
ccm-orch bench --help
`,
	"ui": `
# The dashboard on this machine, reading the fleet's NATS with a read-only context
ccm-orch ui --context fleet-readonly
# On another port, keeping the newest 50,000 runs in memory
ccm-orch ui --listen 127.0.0.1:9090 --max-runs 50000 --server nats://nats.example.com:4222
# On the network: HTTPS and a token are required there
ccm-orch ui --listen 0.0.0.0:8443 --https-cert /etc/ccm/ui.pem --https-key /etc/ccm/ui-key.pem --auth-token /etc/ccm/ui.token
# Log visitors out after 10 idle minutes, and after 8 hours in any case
ccm-orch ui --listen 0.0.0.0:8443 --https-cert /etc/ccm/ui.pem --https-key /etc/ccm/ui-key.pem --auth-token /etc/ccm/ui.token --session-idle 10m --session-lifetime 8h
`,
	"keys new": `
# A signing key: keep ops.seed secret, put the contents of ops.pub in the agents' policy
ccm-orch keys new ops --dir /root/.ccm
`,
	"policy check": `
# Would an agent with web1's facts run this manifest for the web team? One line per decision, exit 2 if not
ccm-orch policy check /etc/ccm/policy.yaml --key web --manifest site.yaml --facts web1-facts.yaml
# A CCM ensure request, judged as a noop run for the auditors, as JSON
ccm-orch policy check policy.yaml --key audit --request nginx.json --facts db1-facts.yaml --noop --json
`,
}
