// Package auditlog owns the audit log's format and file: one JSON line per
// decision about a request or a bundle (Record), bounded in size (Encode),
// appended to a file only its owner can read (File). The fleet agent and
// CCM's continuous agent write the same lines, so one reader serves both.
package auditlog
