package brokertest

import (
	"context"
	"time"

	"github.com/ccm-fleet/ccm/broker"
)

// shutdownTimeout bounds the cleanup's shutdown.
const shutdownTimeout = 30 * time.Second

// TB is the part of testing.TB (and of Ginkgo's GinkgoT()) the helpers use.
type TB interface {
	Helper()
	TempDir() string
	Cleanup(func())
	Fatalf(format string, args ...any)
}

// Start starts a broker on a random 127.0.0.1 port with its store in
// t.TempDir(), and registers its shutdown with t.Cleanup. It fails the test
// when the broker cannot start.
func Start(t TB, opts ...broker.Option) *broker.Broker {
	t.Helper()
	return StartConfig(t, broker.Config{}, opts...)
}

// StartConfig is Start with a configuration (e.g. TLS). An empty Listen
// becomes a random 127.0.0.1 port and an empty StoreDir a directory under
// t.TempDir(); other fields are used as given.
func StartConfig(t TB, cfg broker.Config, opts ...broker.Option) *broker.Broker {
	t.Helper()
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:-1"
	}
	if cfg.StoreDir == "" {
		cfg.StoreDir = t.TempDir()
	}
	b, err := broker.New(cfg, opts...)
	if err != nil {
		t.Fatalf("brokertest: %v", err)
		return nil
	}
	if err := b.Start(context.Background()); err != nil {
		t.Fatalf("brokertest: start: %v", err)
		return nil
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		defer cancel()
		if err := b.Shutdown(ctx); err != nil {
			t.Fatalf("brokertest: shutdown: %v", err)
		}
	})
	return b
}
