package auditlog

import (
	"fmt"
	"slices"
	"time"

	"github.com/ccm-fleet/ccm/protocol"
)

// Bounds of one line.
const (
	// MaxLine bounds one audit line; longer ones are cut down (the
	// resource list first, then the message).
	MaxLine = 16 << 10
	// MaxResources bounds the resources listed in one line.
	MaxResources = 100
	// maxField bounds one string of a line.
	maxField = 512
)

// Record is one line of the audit log.
type Record struct {
	Time      time.Time `json:"time"`
	RequestID string    `json:"request_id"`
	Subject   string    `json:"subject"`
	Signer    Signer    `json:"signer"`
	Identity  string    `json:"identity"`
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
	Result *Result `json:"result,omitempty"`
}

// Signer is the verified signer of a request; empty when unsigned.
type Signer struct {
	Name string `json:"name"`
	Key  string `json:"key"`
}

// Result counts the resources of a finished request by outcome, or holds
// the request-level error it ended with.
type Result struct {
	Changed int             `json:"changed"`
	OK      int             `json:"ok"`
	Failed  int             `json:"failed"`
	Error   *protocol.Error `json:"error,omitempty"`
}

// Encode encodes rec as one line (newline included) of less than MaxLine
// bytes: each string is cut to 512 bytes, the resources to 100, and a line
// still too long loses half its resources, then its message, then all but
// a marker.
func Encode(rec *Record) ([]byte, error) {
	r := *rec
	r.RequestID = Clip(r.RequestID)
	r.Subject = Clip(r.Subject)
	r.Message = Clip(r.Message)
	r.Rule, r.Value = Clip(r.Rule), Clip(r.Value)
	r.Resources = slices.Clone(r.Resources)
	if r.Resources == nil {
		r.Resources = []string{}
	}
	if len(r.Resources) > MaxResources {
		more := len(r.Resources) - MaxResources
		r.Resources = append(r.Resources[:MaxResources:MaxResources], fmt.Sprintf("... and %d more", more))
	}
	for i, s := range r.Resources {
		r.Resources[i] = Clip(s)
	}
	for {
		b, err := appendRecord(make([]byte, 0, 512), &r)
		if err != nil {
			return nil, err
		}
		if len(b) < MaxLine {
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

// Clip cuts s to 512 bytes, marking the cut with "...".
func Clip(s string) string {
	if len(s) <= maxField {
		return s
	}
	return s[:maxField] + "..."
}
