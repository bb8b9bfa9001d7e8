package main

import (
	"github.com/ccm-fleet/ccm/cmd/internal/program"

	"context"
	"os/signal"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/ccm-fleet/ccm/cmd/internal/connflags"
	"github.com/ccm-fleet/ccm/natsconn"
	"github.com/ccm-fleet/ccm/protocol"
)

// connectTimeout bounds the initial connection.
const connectTimeout = 10 * time.Second

// signalContext is the app's context, also ended by SIGINT and SIGTERM.
func (a *app) signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(a.ctx, syscall.SIGINT, syscall.SIGTERM)
}

// connect opens the connection the flags describe; errors are exit 1.
func (a *app) connect(ctx context.Context, c *connflags.Flags) (*nats.Conn, error) {
	cctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	opts, err := c.Options("ccm-orch", a.Logger(), natsconn.Options{})
	if err != nil {
		return nil, program.Exit(protocol.ExitError, err)
	}
	nc, err := natsconn.Connect(cctx, opts)
	if err != nil {
		return nil, program.Exit(protocol.ExitError, c.Explain(err, opts, natsconn.Options{}, ""))
	}
	return nc, nil
}
