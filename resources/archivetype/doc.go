// Package archivetype is the archive resource type: it downloads an archive
// (.tar.gz, .tgz, .tar or .zip) from an HTTP or HTTPS URL to a local path,
// optionally extracts it into a directory and optionally removes the archive
// afterwards.
//
// The package owns the archive properties and their validation, the
// idempotency rules (the ordered state checks and the decision matrix of the
// design documents), the noop messages and the Provider interface that
// archive providers implement (see providers/archivehttp). Removing the
// archive file, for ensure absent and for cleanup, is done here; downloading
// and extracting are the provider's work.
//
// Properties hold credentials (password, header values, URL userinfo): they
// are never logged or put into errors, and Redacted returns the copy the
// engine records in events.
package archivetype
