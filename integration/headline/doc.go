// Package headline holds the end-to-end spec of the product's headline job
// on real hosts: four lab hosts (package internal/lab), each running the
// agent from the project's .deb as its systemd unit, nginx installed from
// Debian's archive by `ccm-orch ensure package nginx --where os=debian
// --where role=web`, configured and kept running by a manifest, audited,
// repaired, and kept by an assignment. Only tests live here.
package headline
