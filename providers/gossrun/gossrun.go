package gossrun

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/goss-org/goss"
	"github.com/goss-org/goss/outputs"
	gossutil "github.com/goss-org/goss/util"

	"github.com/ccm-fleet/ccm/resources/engine"
)

// maxFailures bounds the failed tests described in one output.
const maxFailures = 32

var (
	// ErrRules is wrapped when goss cannot read the rules.
	ErrRules = errors.New("goss rules cannot be read")
	// ErrTimeout is returned when the rules were not validated within the
	// check's timeout.
	ErrTimeout = errors.New("goss rules not validated in time")
)

// Runner validates goss rules, one set at a time: the goss library keeps
// package-level state, so validations never overlap.
type Runner struct {
	// guards every call into the goss library
	mu sync.Mutex
}

var _ engine.GossRunner = (*Runner)(nil)

// New returns a Runner.
func New() *Runner { return &Runner{} }

type result struct {
	out engine.GossOutput
	err error
}

// RunGoss implements engine.GossRunner. The validation runs in its own
// goroutine so that the check returns when ctx ends or timeout passes; goss
// bounds each of its tests itself (commands and HTTP requests have their
// own timeouts), so that goroutine ends soon after, and the next
// validation waits for it.
func (r *Runner) RunGoss(ctx context.Context, rules []byte, timeout time.Duration) (engine.GossOutput, error) {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	done := make(chan result, 1)
	go func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		filterGossLogs()
		out, err := validate(rules)
		done <- result{out, err}
	}()
	select {
	case res := <-done:
		return res.out, res.err
	case <-ctx.Done():
		return engine.GossOutput{}, fmt.Errorf("%w: %w", ErrTimeout, context.Cause(ctx))
	}
}

// validate reads rules as a goss spec and validates it.
func validate(rules []byte) (engine.GossOutput, error) {
	spec, err := goss.ReadJSONData(rules, true)
	if err != nil {
		return engine.GossOutput{}, fmt.Errorf("%w: %w", ErrRules, err)
	}
	var buf bytes.Buffer
	cfg, err := gossutil.NewConfig(
		gossutil.WithMaxConcurrency(1),
		gossutil.WithOutputFormat("structured"),
		gossutil.WithResultWriter(&buf),
	)
	if err != nil {
		return engine.GossOutput{}, fmt.Errorf("goss: %w", err)
	}
	if _, err := goss.ValidateConfig(cfg, &spec); err != nil {
		return engine.GossOutput{}, fmt.Errorf("goss: %w", err)
	}
	var so outputs.StructuredOutput
	if err := json.Unmarshal(buf.Bytes(), &so); err != nil {
		return engine.GossOutput{}, fmt.Errorf("goss output: %w", err)
	}
	out := engine.GossOutput{Tests: so.Summary.TestCount, Failed: so.Summary.Failed, Summary: so.SummaryLine}
	for _, t := range so.Results {
		if t.Result != 0 && len(out.Failures) < maxFailures {
			out.Failures = append(out.Failures, t.SummaryLineCompact)
		}
	}
	return out, nil
}
