package continuous

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
)

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

// AuditRecord is one audit line, in the agent's audit log format (the
// same keys as its fleet request lines, so one reader serves both): the
// subject is the bundle's source, the request id its digest.
type AuditRecord struct {
	Time      time.Time   `json:"time"`
	RequestID string      `json:"request_id"`
	Subject   string      `json:"subject"`
	Signer    AuditSigner `json:"signer"`
	Identity  string      `json:"identity"`
	Resources []string    `json:"resources"`
	Decision  string      `json:"decision"`
	Message   string      `json:"message,omitempty"`
	Rule      string      `json:"rule,omitempty"`
	Value     string      `json:"value,omitempty"`
}

// AuditSigner names a bundle's signer; empty when unsigned.
type AuditSigner struct {
	Name string `json:"name"`
	Key  string `json:"key"`
}

// Auditor writes audit lines. Audit returns an error when the line could
// not be written.
type Auditor interface {
	Audit(rec *AuditRecord) error
}

// maxAuditField bounds one string of an audit line.
const maxAuditField = 512

// FileAuditor appends JSON lines to a file made with mode 0600.
type FileAuditor struct {
	path string
	// guards writes
	mu sync.Mutex
}

// NewFileAuditor returns an auditor appending to path (its directory is
// made 0700 when missing).
func NewFileAuditor(path string) *FileAuditor { return &FileAuditor{path: path} }

// Audit appends rec as one line.
func (a *FileAuditor) Audit(rec *AuditRecord) error {
	r := *rec
	clip := func(s string) string {
		if len(s) > maxAuditField {
			return s[:maxAuditField] + "..."
		}
		return s
	}
	r.Message, r.Subject, r.Rule, r.Value = clip(r.Message), clip(r.Subject), clip(r.Rule), clip(r.Value)
	if r.Resources == nil {
		r.Resources = []string{}
	}
	if len(r.Resources) > 100 {
		r.Resources = append(r.Resources[:100:100], fmt.Sprintf("... and %d more", len(rec.Resources)-100))
	}
	b, err := json.Marshal(&r)
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := os.MkdirAll(filepath.Dir(a.path), 0o700); err != nil {
		return fmt.Errorf("audit %s: %w", a.path, err)
	}
	f, err := os.OpenFile(a.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("audit %s: %w", a.path, err)
	}
	_, err = f.Write(append(b, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("audit %s: %w", a.path, err)
	}
	return nil
}
