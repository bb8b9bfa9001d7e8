package main

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/ccm-fleet/ccm/cmd/internal/program"
	"github.com/ccm-fleet/ccm/manifest"
	"github.com/ccm-fleet/ccm/protocol"
)

// describeEvent renders one event as one line a person can act on.
func describeEvent(ev *protocol.TransactionEvent) string {
	ref := ev.ResourceID()
	took := ev.Duration.Round(time.Millisecond)
	if took == 0 {
		took = ev.Duration.Round(time.Microsecond)
	}
	switch ev.Outcome() {
	case "failed":
		return fmt.Sprintf("%s failed: %s", ref, strings.Join(ev.Errors, "; "))
	case "skipped":
		if len(ev.UnmetRequirements) > 0 {
			return fmt.Sprintf("%s skipped: unmet requirements %s", ref, strings.Join(ev.UnmetRequirements, ", "))
		}
		if len(ev.Errors) > 0 {
			return fmt.Sprintf("%s skipped: %s", ref, strings.Join(ev.Errors, "; "))
		}
		return fmt.Sprintf("%s skipped: control conditions say it is not managed here", ref)
	case protocol.EventWouldChange:
		msg := ev.NoopMessage
		if msg == "" {
			msg = "would change"
		}
		return fmt.Sprintf("%s would change: %s", ref, msg)
	case "changed":
		if ev.Refreshed {
			return fmt.Sprintf("%s changed and refreshed (%s) in %s", ref, ev.FinalEnsure, took)
		}
		return fmt.Sprintf("%s changed (%s) in %s", ref, ev.FinalEnsure, took)
	case "refreshed":
		return fmt.Sprintf("%s refreshed in %s", ref, took)
	default:
		return fmt.Sprintf("%s stable (%s)", ref, ev.FinalEnsure)
	}
}

// writeHealth writes one line per health check of ev: "  health NAME:
// STATUS message".
func writeHealth(w io.Writer, ev *protocol.TransactionEvent) {
	for _, h := range ev.HealthChecks {
		fmt.Fprintf(w, "  health %s: %s %s\n", h.Name, h.Status, h.Message)
	}
}

// warnLogger logs, on stderr, the warnings CCM prints by default (an
// unknown hiera annotation): at warning level unless the global flags
// (--log-level, --debug, -v) ask for another.
func (a *app) warnLogger() *slog.Logger {
	if a.LogLevel != "" || a.Debug || a.Verbose {
		return a.Logger()
	}
	return program.NewLogger(a.Stderr, a.LogFormat, slog.LevelWarn)
}

// ccmLine is one line as CCM's apply prints its log: " LEVEL msg" with
// the level padded to five characters.
func ccmLine(level, msg string) string {
	return fmt.Sprintf(" %-5s %s", level, msg)
}

// ccmEventLine renders one event of "apply" as CCM does: REF OUTCOME
// ensure=E runtime=D provider=P, with noop=, errors= and unmet= as they
// apply; INFO for stable, WARN for changed, refreshed and skipped, ERROR
// for failed and unmet requirements. A resource fail_on_error never
// reached (manifest.NotApplied) is a WARN line saying so.
func ccmEventLine(ev *protocol.TransactionEvent) string {
	name := ev.Name
	if ev.Alias != "" {
		name = ev.Alias + " (alias)"
	}
	ref := ev.Type + "#" + name
	if manifest.NotApplied(ev) {
		return ccmLine("WARN", ref+" "+strings.Join(ev.Errors, "; "))
	}
	attrs := fmt.Sprintf("ensure=%s runtime=%v provider=%s", ev.RequestedEnsure, ev.Duration.Truncate(time.Millisecond), ev.Provider)
	if ev.Noop {
		if ev.NoopMessage != "" {
			attrs += " noop=" + ev.NoopMessage
		} else {
			attrs += " noop=true"
		}
	}
	switch {
	case ev.Failed:
		return ccmLine("ERROR", ref+" failed "+attrs+" errors="+strings.Join(ev.Errors, ", "))
	case len(ev.UnmetRequirements) > 0:
		for _, req := range ev.UnmetRequirements {
			attrs += " unmet=" + req
		}
		return ccmLine("ERROR", ref+" skipped due to unmet requirement "+attrs)
	case ev.Skipped:
		return ccmLine("WARN", ref+" skipped "+attrs)
	case ev.Refreshed:
		return ccmLine("WARN", ref+" refreshed "+attrs)
	case ev.Changed:
		return ccmLine("WARN", ref+" changed "+attrs)
	default:
		return ccmLine("INFO", ref+" stable "+attrs)
	}
}
