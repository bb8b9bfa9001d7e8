package providers

import (
	"context"
	"errors"
	"time"

	"github.com/ccm-fleet/ccm/providers/runner"
	"github.com/ccm-fleet/ccm/resources/engine"
)

// HealthRunner runs health checks with r, the runner every other command of
// the agent uses, so a check's processes are contained like an exec's.
func HealthRunner(r runner.Runner) engine.HealthRunner { return healthRunner{r} }

type healthRunner struct{ r runner.Runner }

// errEmptyCheck is returned for a check with no command (the engine refuses
// those before they reach a runner).
var errEmptyCheck = errors.New("health check: empty command")

// RunHealthCheck implements engine.HealthRunner.
func (h healthRunner) RunHealthCheck(ctx context.Context, argv []string, timeout time.Duration, maxOutput int) (engine.HealthOutput, error) {
	if len(argv) == 0 {
		return engine.HealthOutput{}, errEmptyCheck
	}
	res, err := h.r.Run(ctx, runner.Command{Path: argv[0], Args: argv[1:], Timeout: timeout, MaxOutput: maxOutput})
	if err != nil {
		return engine.HealthOutput{}, err
	}
	return engine.HealthOutput{ExitCode: res.ExitCode, Stdout: res.Stdout, Stderr: res.Stderr}, nil
}
