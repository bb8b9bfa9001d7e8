package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/catalog"
	"github.com/ccm-fleet/ccm/resources/redact"
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

// GossRunner validates the goss rules of one health check. RunGoss returns
// once the rules were validated, ctx ended or timeout passed; an error
// means the rules could not be validated (the check is UNKNOWN). The
// platform's goss validator implements it (providers/gossrun).
type GossRunner interface {
	RunGoss(ctx context.Context, rules []byte, timeout time.Duration) (GossOutput, error)
}

// GossOutput is what one validation of goss rules found.
type GossOutput struct {
	// Tests and Failed count the rules' tests and those that failed.
	Tests, Failed int
	// Summary is goss's summary line: "Count: 2, Failed: 1, Duration: 0.001s".
	Summary string
	// Failures are goss's one-line descriptions of the failed tests.
	Failures []string
}

// ErrGossRefused is wrapped, with resources.ErrForbidden, by the error of
// Prepare for a resource carrying goss rules on an engine given neither
// WithGossRunner nor WithScopedGoss.
var ErrGossRefused = errors.New("goss health checks are refused here: this engine was given no goss runner")

// WithGossRunner lets health checks carry any goss rules, run by r: the
// engines of local manifests (ccm-agent apply, ccm-agent agent), whose
// rules come from the host's own files. A signed bundle's resources are
// still judged by its signer's scopes (catalog.Objects declares what the
// rules touch; a key it cannot declare is refused there).
func WithGossRunner(r GossRunner) Option { return func(e *Engine) { e.goss = r } }

// WithScopedGoss lets health checks carry goss rules whose every key the
// resource catalog declares (catalog.GossObjects), run by r; Prepare
// refuses any other rules (gossfile, kernel-param, matching, ...) before
// anything runs, so that the scopes judging the resource judge all that
// its rules touch. The engine of the fleet agent. r is nil for an engine
// that never runs (a policy check): Prepare leaves such rules to its
// Guard, whose signer's scopes refuse them by the same catalog.
func WithScopedGoss(r GossRunner) Option {
	return func(e *Engine) { e.goss, e.gossScoped = r, true }
}

// refuseGoss is the Prepare error of a resource with goss rules the
// engine does not run: any, on an engine without a GossRunner, or, on a
// scoped one, rules the resource catalog cannot declare.
func (e *Engine) refuseGoss(c *resources.CommonProperties) error {
	for i := range c.HealthChecks {
		hc := &c.HealthChecks[i]
		switch {
		case !hc.IsGoss():
		case e.gossScoped && e.goss == nil:
		case e.gossScoped:
			if _, err := catalog.GossObjects(i, hc.GossRules); err != nil {
				return fmt.Errorf("%w: %w", resources.ErrForbidden, err)
			}
		case e.goss == nil:
			return fmt.Errorf("%w: property health_checks[%d]: %w", resources.ErrForbidden, i, ErrGossRefused)
		}
	}
	return nil
}

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
		res := s.runCheck(ctx, &checks[i], p)
		ev.HealthChecks = append(ev.HealthChecks, res)
		ran := s.eng.health != nil
		if checks[i].IsGoss() {
			ran = s.eng.goss != nil
		}
		if res.Status != protocol.HealthOK && ran {
			ev.Failed = true
			ev.Errors = append(ev.Errors, fmt.Sprintf("health check %s: %s: %s", p.secrets.Value("", res.Name), res.Status, p.secrets.Output(res.Message)))
		}
	}
}

// runCheck runs one check until it is OK or its tries are spent, and
// returns the last try's result.
func (s *Session) runCheck(ctx context.Context, hc *resources.HealthCheck, p *Prepared) *protocol.HealthCheckResult {
	log := redact.Logger(s.log, p.secrets).With("resource", p.Ref())
	res := &protocol.HealthCheckResult{Name: hc.Label(), Command: hc.Command, Code: -1, Status: protocol.HealthUnknown}
	start := s.eng.now()
	defer func() { res.Duration = s.eng.now().Sub(start) }()
	if hc.IsGoss() {
		s.runGoss(ctx, hc, res)
		log.Info("health check", "check", res.Name, "format", resources.HealthFormatGoss, "status", res.Status, "tries", res.Tries)
		return res
	}
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
	log.Info("health check", "check", res.Name, "status", res.Status, "tries", res.Tries)
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

// runGoss validates a check's goss rules until they pass or its tries are
// spent, as CCM does: OK when every rule passes, CRITICAL when one fails,
// UNKNOWN when they could not be validated. The message is goss's summary
// line followed by the failed tests, bounded.
func (s *Session) runGoss(ctx context.Context, hc *resources.HealthCheck, res *protocol.HealthCheckResult) {
	r := s.eng.goss
	if r == nil {
		res.Message = ErrGossRefused.Error()
		return
	}
	rules, err := hc.GossJSON()
	if err != nil {
		res.Message = err.Error()
		return
	}
	for try := 1; try <= hc.TriesCount(); try++ {
		if try > 1 {
			select {
			case <-ctx.Done():
				res.Message = "cancelled: " + ctx.Err().Error()
				return
			case <-time.After(hc.TrySleepDuration()):
			}
		}
		res.Tries = try
		out, err := r.RunGoss(ctx, rules, hc.TimeoutDuration())
		if err != nil {
			res.Code, res.Status, res.Message = -1, protocol.HealthUnknown, "goss: "+err.Error()
			continue
		}
		res.Code, res.Status = 0, protocol.HealthOK
		if out.Failed > 0 {
			res.Code, res.Status = 2, protocol.HealthCritical
		}
		res.Message = gossMessage(out)
		if res.Status == protocol.HealthOK {
			return
		}
	}
}

// gossMessage is the summary line then each failure, on one line, bounded
// by maxHealthMessage.
func gossMessage(out GossOutput) string {
	msg := out.Summary
	for _, f := range out.Failures {
		msg += "; " + strings.Join(strings.Fields(f), " ")
		if len(msg) >= maxHealthMessage {
			break
		}
	}
	if len(msg) > maxHealthMessage {
		msg = strings.ToValidUTF8(msg[:maxHealthMessage], "")
	}
	return msg
}

// expandGossKeys returns props with the keys of every health check's goss
// rules expanded (goss rules are keyed by paths, commands and URLs, which
// CCM templates like any value); props itself is not modified. Values are
// left to ExpandValue, so nothing is expanded twice.
func (s *Session) expandGossKeys(props map[string]any) (map[string]any, error) {
	checks, ok := props["health_checks"].([]any)
	if !ok {
		return props, nil
	}
	var out []any
	for i, c := range checks {
		hc, ok := c.(map[string]any)
		if !ok {
			continue
		}
		rules, ok := hc["goss_rules"].(map[string]any)
		if !ok {
			continue
		}
		exp, err := s.opts.Env.ExpandKeys(rules)
		if err != nil {
			return nil, fmt.Errorf("property health_checks[%d].goss_rules: %w", i, err)
		}
		if out == nil {
			out = slices.Clone(checks)
		}
		nc := maps.Clone(hc)
		nc["goss_rules"] = exp
		out[i] = nc
	}
	if out == nil {
		return props, nil
	}
	np := maps.Clone(props)
	np["health_checks"] = out
	return np, nil
}
