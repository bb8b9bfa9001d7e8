// Package redact owns the one redaction step every record about a resource
// passes before it leaves the agent: the transaction event (and so the
// reply, the history record, the dashboard and the audit line built from
// it), the resource's error messages and the agent's log lines about it.
//
// What must not leave is described by a Secrets value, one per resource:
// for a sensitive resource no content, command output, stderr, health-check
// message or templated property value leaves the host, and no value of data
// marked sensitive appears anywhere. The shape of each record stays: a field
// that had a value says Marker instead, an error keeps its words and loses
// only the secret parts ("exit code 3 is not one of [0]: [redacted]").
//
// Errors are redacted from their structure, never by editing their text: an
// error type that carries a secret implements Redactable and renders
// itself without it. An error that does not, and whose text still holds a
// known secret value, is withheld whole (the resource and Marker).
package redact
