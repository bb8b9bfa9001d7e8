package systemd

import (
	"fmt"
	"strings"

	"github.com/ccm-fleet/ccm/providers/runner"
)

// activeState maps a state systemctl is-active prints to running; known
// is false for any other output. Only "active" is running: a unit on its way
// up ("activating") is not yet.
func activeState(out string) (running, known bool) {
	switch out {
	case "active":
		return true, true
	case "inactive", "failed", "activating":
		return false, true
	}
	return false, false
}

// enabledState maps a state systemctl is-enabled prints to enabled; known
// is false for any other output. "not-found" is handled apart: it is an
// error.
func enabledState(out string) (enabled, known bool) {
	switch out {
	case "enabled", "enabled-runtime", "alias", "static", "indirect", "generated", "transient":
		return true, true
	case "linked", "linked-runtime", "masked", "masked-runtime", "disabled":
		return false, true
	}
	return false, false
}

// parseIsActive maps the stdout of systemctl is-active to running. The exit
// code is not used: it is 3 for every state but active.
func parseIsActive(res *runner.Result) (bool, error) {
	out := strings.TrimSpace(string(res.Stdout))
	running, ok := activeState(out)
	if !ok {
		return false, unknownOutput(ErrInvalidIsActive, res)
	}
	return running, nil
}

// parseIsEnabled maps the stdout of systemctl is-enabled to enabled, and
// masked for "masked" and "masked-runtime" (a unit systemctl refuses to
// start or enable). The exit code is not used: it is 1 for a disabled,
// masked or linked unit and 4 for a missing one. systemd before 254 prints
// nothing for a missing unit and says "No such file or directory" on stderr
// instead of "not-found"; that is a missing unit too.
func parseIsEnabled(res *runner.Result) (enabled, masked bool, err error) {
	out := strings.TrimSpace(string(res.Stdout))
	if out == "not-found" || (out == "" && res.ExitCode != 0 && strings.Contains(string(res.Stderr), "No such file or directory")) {
		return false, false, ErrServiceNotFound
	}
	enabled, ok := enabledState(out)
	if !ok {
		return false, false, unknownOutput(ErrInvalidIsEnabled, res)
	}
	return enabled, out == "masked" || out == "masked-runtime", nil
}

// unknownOutput is the error for output no state matches; it quotes the
// output and adds systemctl's stderr, which usually says why.
func unknownOutput(sentinel error, res *runner.Result) error {
	out := strings.TrimSpace(string(res.Stdout))
	if len(out) > maxMessage {
		out = out[:maxMessage] + "..."
	}
	detail := ""
	if stderr := clip(res.Stderr); stderr != "" {
		detail = ": " + stderr
	}
	return fmt.Errorf("%w %q (exit status %d)%s", sentinel, out, res.ExitCode, detail)
}
