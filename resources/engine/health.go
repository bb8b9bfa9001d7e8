package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/redact"
	"github.com/ccm-fleet/ccm/resources"
)

// maxHealthMessage bounds a health check's message.
const maxHealthMessage = 512

// maxHealthOutput bounds what is kept of each stream of a check's command.
const maxHealthOutput = 4096

// HealthRunner runs the command of one health check. RunHealthCheck starts
// argv[0] (an absolute path, or a name looked up in PATH) with argv[1:] as
// its arguments, ends it and every process it started after timeout or when
// ctx ends, and keeps at most maxOutput bytes of each stream. An error means
// the command could not be run to its end; one that ran and exited non-zero
// is not an error, its code is in the output. The engine declares what it
// needs here; the platform's command runner implements it
// (providers.HealthRunner).
type HealthRunner interface {
	RunHealthCheck(ctx context.Context, argv []string, timeout time.Duration, maxOutput int) (HealthOutput, error)
}

// HealthOutput is what one health-check command did.
type HealthOutput struct {
	ExitCode       int
	Stdout, Stderr []byte
}

// ErrNoHealthRunner is the result of a health check on an engine built
// without a HealthRunner: the check is UNKNOWN, never run.
var ErrNoHealthRunner = errors.New("no health-check runner: the engine was built without one")

// WithHealthRunner sets what runs health checks. Without one every check is
// UNKNOWN (ErrNoHealthRunner).
func WithHealthRunner(r HealthRunner) Option { return func(e *Engine) { e.health = r } }

// checkHealth runs the resource's health checks in order, puts their
// results in ev and, as CCM does, fails ev for each one that is not OK
// (WARNING, CRITICAL, or UNKNOWN because it ran and exited 3 or more, or
// could not run). A check never run because the engine has no runner stays
// UNKNOWN without failing: nothing was checked. A sensitive resource's
// check messages are its output: the error says only the marker.
func (s *Session) checkHealth(ctx context.Context, p *Prepared, ev *protocol.TransactionEvent) {
	checks := p.Properties.Common().HealthChecks
	for i := range checks {
		res := s.runCheck(ctx, &checks[i], p.secrets)
		ev.HealthChecks = append(ev.HealthChecks, res)
		if res.Status != protocol.HealthOK && s.eng.health != nil {
			ev.Failed = true
			ev.Errors = append(ev.Errors, fmt.Sprintf("health check %s: %s: %s", p.secrets.Value("", res.Name), res.Status, p.secrets.Output(res.Message)))
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
		res.Message = ErrNoHealthRunner.Error()
		return res
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
		out, err := r.RunHealthCheck(ctx, argv, hc.TimeoutDuration(), maxHealthOutput)
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
