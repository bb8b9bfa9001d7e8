package agent

import (
	"github.com/ccm-fleet/ccm/auditlog"
	"github.com/ccm-fleet/ccm/protocol"
)

// AuditFileName is the audit log's default name below the state directory.
const AuditFileName = "audit.log"

// Audit log bounds (see auditlog.Encode).
const (
	// MaxAuditLine bounds one audit line; longer ones are cut down (the
	// resource list first, then the message).
	MaxAuditLine = auditlog.MaxLine
	// maxAuditResources bounds the resources listed in one line.
	maxAuditResources = auditlog.MaxResources
)

// ErrAudit is returned when an audit line cannot be written; the agent
// then does not execute the request.
var ErrAudit = auditlog.ErrUnavailable

// Audit decisions besides the refusal codes.
const (
	// DecisionAccepted: the request passed every check and was queued;
	// the line with its result follows when it finishes.
	DecisionAccepted = "accepted"
	// DecisionNotTargeted: the request's targets or filter leave this
	// host out; it is ignored.
	DecisionNotTargeted = "not_targeted"
)

// The audit log's lines, as package auditlog defines them (one format for
// the fleet agent and CCM's continuous agent).
type (
	AuditRecord = auditlog.Record
	AuditSigner = auditlog.Signer
	AuditResult = auditlog.Result
)

// newAuditResult summarizes a reply.
func newAuditResult(r *protocol.FleetReply) *AuditResult {
	res := &AuditResult{Error: r.Error}
	for _, ev := range r.Events {
		switch {
		case ev.Failed:
			res.Failed++
		case ev.Changed || ev.Refreshed:
			res.Changed++
		default:
			res.OK++
		}
	}
	return res
}

// auditLog is the agent's audit log file.
type auditLog struct{ f *auditlog.File }

// openAuditLog opens (creates, mode 0600) the audit log for appending; an
// existing regular file is restricted to 0600.
func openAuditLog(path string) (*auditLog, error) {
	f, err := auditlog.Open(path)
	if err != nil {
		return nil, err
	}
	return &auditLog{f: f}, nil
}

// auditor writes audit lines: admission's record of every decision, and
// of every job before it runs.
type auditor interface {
	// write appends rec as one line; an error means it was not kept (a
	// job is then not run).
	write(rec *AuditRecord) error
}

var _ auditor = (*auditLog)(nil)

// write appends rec as one line of at most MaxAuditLine bytes.
func (l *auditLog) write(rec *AuditRecord) error { return l.f.Write(rec) }

// close closes the file.
func (l *auditLog) close() error { return l.f.Close() }

// clip cuts s as an audit line's strings are cut.
func clip(s string) string { return auditlog.Clip(s) }

// forbiddenAtRun makes the result line of an accepted request that the
// policy refused as it was about to run (the engine's guard: a scope on a
// path, command or name as expanded) a forbidden line, as a refusal at
// admission is: decision "forbidden", the message, and the rule and value
// the guard set.
func forbiddenAtRun(rec *AuditRecord, e *protocol.Error) {
	if rec.Decision == DecisionAccepted && e != nil && e.Code == protocol.CodeForbidden {
		rec.Decision = string(protocol.CodeForbidden)
		rec.Message = e.Message
	}
}
