package natsconn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/nats-io/nats.go"
)

// Initial connect backoff of ConnectRetry: the wait after the n-th failed
// attempt is min(retryBase*2^(n-1), retryMax), of which the upper half is
// random so a fleet started together does not retry in lockstep. Failures
// are logged at most once per retryLogInterval.
const (
	retryBase        = 250 * time.Millisecond
	retryMax         = 30 * time.Second
	retryLogInterval = 30 * time.Second
)

// ConnectRetry is Connect for daemons: when no server accepts the initial
// connection (an error wrapping ErrConnect), it tries again with capped,
// jittered exponential backoff (250ms doubling to 30s) until a server
// accepts or ctx is done. It logs the first failure at Warn and then at
// most one line per 30s, counting the attempts in between. Errors that
// retrying cannot cure (ErrContext, ErrCredentials, ErrOptions: a context,
// credential or option that does not load) are returned at once. When ctx
// is done first, the error wraps ErrConnect and ctx's error. A dial in
// progress is not interrupted: ctx is noticed within DefaultConnectTimeout.
func ConnectRetry(ctx context.Context, opts Options) (*nats.Conn, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var (
		lastLog time.Time
		unseen  int // failures since the last log line
	)
	for attempt := 1; ; attempt++ {
		nc, err := Connect(ctx, opts)
		if err == nil {
			if attempt > 1 {
				log.Info("NATS reachable after retrying", "attempts", attempt)
			}
			return nc, nil
		}
		if !errors.Is(err, ErrConnect) || ctx.Err() != nil {
			return nil, err
		}
		unseen++
		wait := retryDelay(attempt)
		if now := time.Now(); lastLog.IsZero() || now.Sub(lastLog) >= retryLogInterval {
			log.Warn("NATS not reachable; retrying", "error", err, "failed_attempts", unseen, "next_attempt_in", wait.Round(time.Millisecond))
			lastLog, unseen = now, 0
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("%w: gave up waiting: %w", ErrConnect, ctx.Err())
		case <-t.C:
		}
	}
}

// retryDelay is the wait after attempts failed initial connects.
func retryDelay(attempts int) time.Duration {
	d := retryMax
	if attempts >= 1 && attempts <= 16 {
		d = min(retryBase<<(attempts-1), retryMax)
	}
	half := d / 2
	return half + rand.N(half+1)
}
