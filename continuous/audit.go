package continuous

import "github.com/ccm-fleet/ccm/auditlog"

// Audit decisions the continuous agent writes.
const (
	// DecisionApplied: a bundle was verified and applied.
	DecisionApplied = "accepted"
	// DecisionUnauthenticated: a bundle was unsigned or its signature did
	// not verify or came from a key the policy does not trust.
	DecisionUnauthenticated = "unauthenticated"
	// DecisionForbidden: the signer's policy refused a resource of the
	// bundle or this host.
	DecisionForbidden = "forbidden"
)

// AuditRecord is one audit line, in the agent's audit log format (package
// auditlog: one reader serves both): the subject is the bundle's source,
// the request id its digest.
type (
	AuditRecord = auditlog.Record
	AuditSigner = auditlog.Signer
)

// Auditor writes audit lines. Audit returns an error when the line could
// not be written.
type Auditor interface {
	Audit(rec *AuditRecord) error
}

// FileAuditor appends audit lines to a file made with mode 0600.
type FileAuditor struct{ f *auditlog.File }

// NewFileAuditor returns an auditor appending to path (its directory is
// made 0700 when missing), opened at the first line.
func NewFileAuditor(path string) *FileAuditor { return &FileAuditor{f: auditlog.New(path)} }

// Audit appends rec as one line (bounded as auditlog.Encode bounds it).
func (a *FileAuditor) Audit(rec *AuditRecord) error { return a.f.Write(rec) }
