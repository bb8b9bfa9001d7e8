package resources

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/kballard/go-shellquote"
)

// Health check bounds and defaults.
const (
	// DefaultHealthTimeout is how long one try may run when no timeout is
	// given.
	DefaultHealthTimeout = 30 * time.Second
	// MaxHealthTimeout bounds a try's timeout.
	MaxHealthTimeout = time.Hour
	// DefaultHealthTrySleep is the pause between tries when none is given.
	DefaultHealthTrySleep = time.Second
	// MaxHealthTrySleep bounds the pause between tries.
	MaxHealthTrySleep = 10 * time.Minute
	// MaxHealthTries bounds the tries of one check.
	MaxHealthTries = 100
	// MaxHealthChecks bounds the checks of one resource.
	MaxHealthChecks = 32
)

// Health check formats, as CCM names them.
const (
	// HealthFormatNagios is a command whose exit code is the status.
	HealthFormatNagios = "nagios"
	// HealthFormatGoss is a set of goss rules: OK when every rule passes,
	// CRITICAL when one fails.
	HealthFormatGoss = "goss"
)

// MaxGossRulesBytes bounds the goss rules of one check, as JSON.
const MaxGossRulesBytes = 64 << 10

// HealthCheck is run after a resource is applied. Nagios style (Command):
// exit 0 OK, 1 WARNING, 2 CRITICAL, anything else UNKNOWN, the first line
// of its output the message. Goss style (GossRules): the rules, expanded
// like every other property, are validated by goss; OK when all pass,
// CRITICAL when one fails. As in CCM, a check that is not OK fails the
// resource.
type HealthCheck struct {
	// Name names the check in events; the command when empty.
	Name string `json:"name,omitempty"`
	// Command is the executable and its arguments, split as a shell would
	// split them, run without a shell. Exclusive with GossRules.
	Command string `json:"command"`
	// GossRules are goss validation rules (file, command, package,
	// service, port, http, ...). Exclusive with Command.
	GossRules map[string]any `json:"goss_rules,omitempty"`
	// Format is "nagios" (Command) or "goss" (GossRules); found from the
	// field set when empty.
	Format string `json:"format,omitempty"`
	// Timeout bounds one try (a Go duration); DefaultHealthTimeout when
	// empty.
	Timeout string `json:"timeout,omitempty"`
	// Tries is how many times the check runs until it is OK; 1 when 0.
	Tries int `json:"tries,omitempty"`
	// TrySleep is the pause between tries; DefaultHealthTrySleep when
	// empty.
	TrySleep string `json:"try_sleep,omitempty"`
}

// Argv splits the command into the executable and its arguments.
func (h *HealthCheck) Argv() ([]string, error) {
	words, err := shellquote.Split(h.Command)
	if err != nil {
		return nil, fmt.Errorf("command %q: %w", h.Command, err)
	}
	if len(words) == 0 {
		return nil, errors.New("command is empty")
	}
	return words, nil
}

// Label is the check's name, or its command ("goss" for goss rules).
func (h *HealthCheck) Label() string {
	switch {
	case h.Name != "":
		return h.Name
	case h.IsGoss():
		return HealthFormatGoss
	}
	return h.Command
}

// IsGoss reports whether the check is goss rules rather than a command.
func (h *HealthCheck) IsGoss() bool { return len(h.GossRules) > 0 || h.Format == HealthFormatGoss }

// GossJSON is the check's goss rules as JSON, the form goss reads.
func (h *HealthCheck) GossJSON() ([]byte, error) {
	b, err := json.Marshal(h.GossRules)
	if err != nil {
		return nil, fmt.Errorf("goss_rules: %w", err)
	}
	return b, nil
}

// TimeoutDuration is the timeout of one try.
func (h *HealthCheck) TimeoutDuration() time.Duration {
	d, err := time.ParseDuration(h.Timeout)
	if err != nil || d <= 0 {
		return DefaultHealthTimeout
	}
	return d
}

// TrySleepDuration is the pause between tries.
func (h *HealthCheck) TrySleepDuration() time.Duration {
	d, err := time.ParseDuration(h.TrySleep)
	if err != nil || d < 0 {
		return DefaultHealthTrySleep
	}
	return d
}

// TriesCount is how many tries the check has.
func (h *HealthCheck) TriesCount() int { return max(h.Tries, 1) }

func (h *HealthCheck) validate() error {
	switch {
	case h.Command != "" && len(h.GossRules) > 0:
		return errors.New("command and goss_rules are mutually exclusive")
	case h.Format != "" && h.Format != HealthFormatNagios && h.Format != HealthFormatGoss:
		return fmt.Errorf("format %q: use %q or %q", h.Format, HealthFormatNagios, HealthFormatGoss)
	case len(h.GossRules) > 0 && h.Format == HealthFormatNagios:
		return errors.New("format must be goss when using goss_rules")
	case h.Command != "" && h.Format == HealthFormatGoss:
		return errors.New("format must be nagios when using command")
	case h.IsGoss():
		if len(h.GossRules) == 0 {
			return errors.New("goss_rules: no rules")
		}
		b, err := h.GossJSON()
		if err != nil {
			return err
		}
		if len(b) > MaxGossRulesBytes {
			return fmt.Errorf("goss_rules: %d bytes, the limit is %d", len(b), MaxGossRulesBytes)
		}
	default:
		if _, err := h.Argv(); err != nil {
			return err
		}
	}
	if h.Tries < 0 || h.Tries > MaxHealthTries {
		return fmt.Errorf("tries %d must be between 1 and %d", h.Tries, MaxHealthTries)
	}
	for _, d := range []struct {
		name, value string
		max         time.Duration
	}{{"timeout", h.Timeout, MaxHealthTimeout}, {"try_sleep", h.TrySleep, MaxHealthTrySleep}} {
		if d.value == "" {
			continue
		}
		v, err := time.ParseDuration(d.value)
		if err != nil {
			return fmt.Errorf("%s %q: use a number with a unit such as \"30s\"", d.name, d.value)
		}
		if v < 0 || v > d.max || (d.name == "timeout" && v == 0) {
			return fmt.Errorf("%s %s must be positive and at most %s", d.name, v, d.max)
		}
	}
	return nil
}
