package engine

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/providers/runner"
	"github.com/ccm-fleet/ccm/redact"
	"github.com/ccm-fleet/ccm/resources"
)

// maxHealthMessage bounds a health check's message.
const maxHealthMessage = 512

// WithHealthRunner sets what runs health checks; the default runs real
// processes (runner.Exec).
func WithHealthRunner(r runner.Runner) Option { return func(e *Engine) { e.health = r } }

// checkHealth runs the resource's health checks in order, puts their
// results in ev and fails ev for each CRITICAL one. A sensitive resource's
// check messages are its output: the error says only the marker.
func (s *Session) checkHealth(ctx context.Context, p *Prepared, ev *protocol.TransactionEvent) {
	checks := p.Properties.Common().HealthChecks
	for i := range checks {
		res := s.runCheck(ctx, &checks[i], p.secrets)
		ev.HealthChecks = append(ev.HealthChecks, res)
		if res.Status == protocol.HealthCritical {
			ev.Failed = true
			ev.Errors = append(ev.Errors, fmt.Sprintf("health check %s: CRITICAL: %s", p.secrets.Value("", res.Name), p.secrets.Output(res.Message)))
		}
	}
}

// runCheck runs one check until it is OK or its tries are spent, and
// returns the last try's result.
func (s *Session) runCheck(ctx context.Context, hc *resources.HealthCheck, secrets *redact.Secrets) *protocol.HealthCheckResult {
	res := &protocol.HealthCheckResult{Name: hc.Label(), Command: hc.Command, Code: -1, Status: protocol.HealthUnknown}
	start := s.eng.now()
	defer func() { res.Duration = s.eng.now().Sub(start) }()
	argv, err := hc.Argv()
	if err != nil {
		res.Message = err.Error()
		return res
	}
	r := s.eng.health
	if r == nil {
		r = runner.Exec{}
	}
	for try := 1; try <= hc.TriesCount(); try++ {
		if try > 1 {
			select {
			case <-ctx.Done():
				res.Message = "cancelled: " + ctx.Err().Error()
				return res
			case <-time.After(hc.TrySleepDuration()):
			}
		}
		res.Tries = try
		out, err := r.Run(ctx, runner.Command{Path: argv[0], Args: argv[1:], Timeout: hc.TimeoutDuration(), MaxOutput: 4096})
		if err != nil {
			res.Code, res.Status, res.Message = -1, protocol.HealthUnknown, err.Error()
			continue
		}
		res.Code, res.Status = out.ExitCode, protocol.HealthStatus(out.ExitCode)
		res.Message = firstLine(out.Stdout, out.Stderr)
		if res.Status == protocol.HealthOK {
			break
		}
	}
	redact.Logger(s.eng.log, secrets).Info("health check", "check", res.Name, "status", res.Status, "tries", res.Tries)
	return res
}

// firstLine is the first non-empty line of stdout, else of stderr.
func firstLine(outs ...[]byte) string {
	for _, o := range outs {
		for _, l := range bytes.Split(o, []byte("\n")) {
			if t := strings.TrimSpace(string(l)); t != "" {
				if len(t) > maxHealthMessage {
					t = t[:maxHealthMessage]
				}
				return t
			}
		}
	}
	return ""
}
