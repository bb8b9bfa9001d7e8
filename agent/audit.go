package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/ccm-fleet/ccm/protocol"
)

// AuditFileName is the audit log's default name below the state directory.
const AuditFileName = "audit.log"

// Audit log bounds.
const (
	// MaxAuditLine bounds one audit line; longer ones are cut down (the
	// resource list first, then the message).
	MaxAuditLine = 16 << 10
	// maxAuditResources bounds the resources listed in one line.
	maxAuditResources = 100
	// maxAuditField bounds one string of a line.
	maxAuditField = 512
)

// ErrAudit is returned when an audit line cannot be written; the agent
// then does not execute the request.
var ErrAudit = errors.New("audit log unavailable")

// Audit decisions besides the refusal codes.
const (
	// DecisionAccepted: the request passed every check and was queued;
	// the line with its result follows when it finishes.
	DecisionAccepted = "accepted"
	// DecisionNotTargeted: the request's targets or filter leave this
	// host out; it is ignored.
	DecisionNotTargeted = "not_targeted"
)

// AuditRecord is one line of the audit log.
type AuditRecord struct {
	Time      time.Time   `json:"time"`
	RequestID string      `json:"request_id"`
	Subject   string      `json:"subject"`
	Signer    AuditSigner `json:"signer"`
	Identity  string      `json:"identity"`
	// Resources are the request's resources as type#name.
	Resources []string `json:"resources"`
	// Decision is "accepted", "not_targeted" or the refusal code.
	Decision string `json:"decision"`
	// Message says why a request was refused.
	Message string `json:"message,omitempty"`
	// Rule is the policy rule that refused the request, as written
	// (`file.paths (no prefix holds /etc/shadow: default deny)`,
	// `deny.exec.commands[0] "/bin/sh **"`), and Value the value it
	// refused (a path, a command, a host), for a forbidden request.
	Rule  string `json:"rule,omitempty"`
	Value string `json:"value,omitempty"`
	// Result is the outcome of an accepted request once it finished.
	Result *AuditResult `json:"result,omitempty"`
}

// AuditSigner is the verified signer of a request; empty when unsigned.
type AuditSigner struct {
	Name string `json:"name"`
	Key  string `json:"key"`
}

// AuditResult counts the resources of a finished request by outcome, or
// holds the request-level error it ended with.
type AuditResult struct {
	Changed int             `json:"changed"`
	OK      int             `json:"ok"`
	Failed  int             `json:"failed"`
	Error   *protocol.Error `json:"error,omitempty"`
}

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

// auditLog appends JSON lines to a file opened with mode 0600.
type auditLog struct {
	path string
	// guards file
	mu   sync.Mutex
	file *os.File
}

// openAuditLog opens (creates, mode 0600) the audit log for appending; an
// existing regular file is restricted to 0600.
func openAuditLog(path string) (*auditLog, error) {
	l := &auditLog{path: path}
	if err := l.openLocked(); err != nil {
		return nil, err
	}
	return l, nil
}

func (l *auditLog) openLocked() error {
	if err := os.MkdirAll(filepath.Dir(l.path), 0o700); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrAudit, l.path, err)
	}
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrAudit, l.path, err)
	}
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm() != 0o600 {
		if err := f.Chmod(0o600); err != nil {
			_ = f.Close()
			return fmt.Errorf("%w: %s: %w", ErrAudit, l.path, err)
		}
	}
	l.file = f
	return nil
}

// auditor writes audit lines: admission's record of every decision, and
// of every job before it runs.
type auditor interface {
	// write appends rec as one line; an error means it was not kept (a
	// job is then not run).
	write(rec *AuditRecord) error
}

var _ auditor = (*auditLog)(nil)

// write appends rec as one line of at most MaxAuditLine bytes. A failed
// write closes the file, so the next write opens it again.
func (l *auditLog) write(rec *AuditRecord) error {
	b, err := encodeAudit(rec)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrAudit, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.file == nil {
		if err := l.openLocked(); err != nil {
			return err
		}
	}
	if _, err := l.file.Write(b); err != nil {
		_ = l.file.Close()
		l.file = nil
		return fmt.Errorf("%w: %s: %w", ErrAudit, l.path, err)
	}
	return nil
}

// close closes the file.
func (l *auditLog) close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.file == nil {
		return nil
	}
	err := l.file.Close()
	l.file = nil
	return err
}

// encodeAudit encodes rec as a line, cutting it down to MaxAuditLine.
func encodeAudit(rec *AuditRecord) ([]byte, error) {
	r := *rec
	r.RequestID = clip(r.RequestID)
	r.Subject = clip(r.Subject)
	r.Message = clip(r.Message)
	r.Rule, r.Value = clip(r.Rule), clip(r.Value)
	r.Resources = slices.Clone(r.Resources)
	if r.Resources == nil {
		r.Resources = []string{}
	}
	if len(r.Resources) > maxAuditResources {
		more := len(r.Resources) - maxAuditResources
		r.Resources = append(r.Resources[:maxAuditResources:maxAuditResources], fmt.Sprintf("... and %d more", more))
	}
	for i, s := range r.Resources {
		r.Resources[i] = clip(s)
	}
	for {
		b, err := json.Marshal(&r)
		if err != nil {
			return nil, err
		}
		if len(b) < MaxAuditLine {
			return append(b, '\n'), nil
		}
		switch {
		case len(r.Resources) > 1:
			r.Resources = append(r.Resources[:len(r.Resources)/2:len(r.Resources)/2], "... cut")
		case r.Message != "":
			r.Message = ""
		default:
			r.Resources = []string{"... cut"}
			r.Result = nil
		}
	}
}

// clip cuts s to maxAuditField bytes.
func clip(s string) string {
	if len(s) <= maxAuditField {
		return s
	}
	return s[:maxAuditField] + "..."
}

// forbiddenAtRun makes the result line of an accepted request that the
// policy refused as it was about to run (the engine's guard: a scope on a
// path, command or name as expanded) a forbidden line, as a refusal at
// admission is: decision "forbidden", the message, and the rule and value
// the guard set.
func (rec *AuditRecord) forbiddenAtRun(e *protocol.Error) {
	if rec.Decision == DecisionAccepted && e != nil && e.Code == protocol.CodeForbidden {
		rec.Decision = string(protocol.CodeForbidden)
		rec.Message = e.Message
	}
}
