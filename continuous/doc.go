// Package continuous owns the continuous agent CCM users run on every host:
// its configuration file (CCM's /etc/choria/ccm/config.yaml, keys,
// defaults and limits unchanged), the loop that applies every manifest
// source in full every interval and runs health checks alone every
// health_check_interval (a CRITICAL result, not a WARNING, triggers a
// remediation apply of that manifest), the watch on remote sources (a
// change is applied at once, retried with exponential backoff), and the
// Prometheus metrics under CCM's choria_ccm_* names.
//
// A remote bundle is applied only when its signature verifies and the
// agent's policy trusts its signer for every resource, as it would for a
// fleet assignment; a refused bundle is written to the audit log. The
// agent runs a manifest through an Applier; LocalApplier runs it on this
// host through the resources engine, and the fleet agent's pipeline
// (package agent: Standalone for `ccm-agent agent`, manifest sources in
// `ccm-agent run`) also audits, counts and records it in history.
package continuous
