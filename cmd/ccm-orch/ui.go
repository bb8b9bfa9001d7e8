package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/choria-io/fisk"

	"github.com/ccm-fleet/ccm/cmd/internal/connflags"
	"github.com/ccm-fleet/ccm/cmd/internal/program"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/ui"
)

func (a *app) registerUI(cli *fisk.Application) {
	var (
		listen  string
		maxRuns int
	)
	cmd := cli.Command("ui", "Serve a read-only web dashboard of the fleet: hosts, runs, drift and health, updated live")
	cmd.Flag("listen", "Address the dashboard listens on (it has no login: keep it on loopback or behind a proxy that authenticates)").Default("127.0.0.1:8080").StringVar(&listen)
	cmd.Flag("max-runs", "Most runs kept in memory from the history, the newest").Default("10000").IntVar(&maxRuns)
	conn := connflags.Register(cmd)
	cmd.Action(func(*fisk.ParseContext) error {
		ctx, stop := a.signalContext()
		defer stop()
		nc, err := a.connect(ctx, conn)
		if err != nil {
			return err
		}
		defer nc.Close()
		srv, err := ui.New(nc, ui.Options{Log: a.Logger(), MaxRuns: maxRuns})
		if err != nil {
			return program.Exit(protocol.ExitError, err)
		}
		l, err := net.Listen("tcp", listen)
		if err != nil {
			return program.Exit(protocol.ExitError, fmt.Errorf("ui: %w", err))
		}
		fmt.Fprintf(a.Stdout, "CCM Fleet dashboard on http://%s/ (Ctrl-C to stop)\n", l.Addr())
		return a.serveUI(ctx, l, srv)
	})
}

// serveUI serves the dashboard on l until ctx ends.
func (a *app) serveUI(ctx context.Context, l net.Listener, srv *ui.Server) error {
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() { srv.Run(rctx) })
	wg.Go(func() {
		<-rctx.Done()
		sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer scancel()
		_ = hs.Shutdown(sctx)
	})
	err := hs.Serve(l)
	cancel()
	wg.Wait()
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return program.Exit(protocol.ExitError, fmt.Errorf("ui: %w", err))
	}
	return nil
}
