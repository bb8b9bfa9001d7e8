package main

import (
	"github.com/ccm-fleet/ccm/cmd/internal/program"

	"context"
	"fmt"

	"github.com/choria-io/fisk"

	"github.com/ccm-fleet/ccm/broker"
	"github.com/ccm-fleet/ccm/protocol"
)

func (a *app) registerBroker(cli *fisk.Application) {
	var cfg broker.Config
	cmd := cli.Command("broker", "Run an embedded NATS broker with JetStream until interrupted")
	cmd.Flag("listen", "Client address host:port").Default(broker.DefaultListen).StringVar(&cfg.Listen)
	cmd.Flag("store", "JetStream store directory (default: a temporary directory removed at exit)").PlaceHolder("DIR").StringVar(&cfg.StoreDir)
	cmd.Action(func(*fisk.ParseContext) error {
		ctx, stop := a.signalContext()
		defer stop()
		b, err := broker.New(cfg, broker.WithLogger(a.Logger()))
		if err != nil {
			return program.Exit(protocol.ExitError, err)
		}
		if err := b.Start(ctx); err != nil {
			return program.Exit(protocol.ExitError, err)
		}
		fmt.Fprintf(a.Stdout, "broker listening on %s\n", b.ClientURL())
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), broker.DefaultReadyTimeout)
		defer cancel()
		if err := b.Shutdown(sctx); err != nil {
			return program.Exit(protocol.ExitError, err)
		}
		return nil
	})
}
