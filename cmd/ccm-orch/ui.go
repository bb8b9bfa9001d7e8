package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
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
		listen, tokenFile, certFile, keyFile string
		maxRuns                              int
		proxies                              []string
		sessionIdle, sessionLifetime         time.Duration
	)
	cmd := cli.Command("ui", "Serve a read-only web dashboard of the fleet: hosts, runs, drift and health, updated live")
	cmd.Flag("listen", "Address the dashboard listens on; anything but loopback needs --https-cert/--https-key and --auth-token").Default("127.0.0.1:8080").StringVar(&listen)
	cmd.Flag("auth-token", "File holding the token every visitor must give (at least 16 characters; typed in once at /login, or sent as Authorization: Bearer)").PlaceHolder("FILE").StringVar(&tokenFile)
	program.DurationVar(cmd.Flag("session-idle", "A login session not used for this long ends").Default(ui.DefaultSessionIdle.String()), &sessionIdle)
	program.DurationVar(cmd.Flag("session-lifetime", "A login session ends this long after the login, used or not").Default(ui.DefaultSessionLifetime.String()), &sessionLifetime)
	cmd.Flag("https-cert", "Serve HTTPS with this certificate (PEM); --tlscert is the NATS connection's").PlaceHolder("FILE").StringVar(&certFile)
	cmd.Flag("https-key", "Private key of --https-cert (PEM)").PlaceHolder("FILE").StringVar(&keyFile)
	cmd.Flag("trusted-proxy", "A reverse proxy in front of the dashboard (an address or a CIDR, repeatable): its X-Forwarded-For names the client whose wrong tokens are throttled; nobody else's is read").PlaceHolder("CIDR").StringsVar(&proxies)
	cmd.Flag("max-runs", "Most runs kept in memory from the history, the newest").Default("10000").IntVar(&maxRuns)
	conn := connflags.Register(cmd)
	cmd.Action(func(*fisk.ParseContext) error {
		token, err := uiToken(tokenFile)
		if err != nil {
			return program.Exit(protocol.ExitError, err)
		}
		if (certFile == "") != (keyFile == "") {
			return program.Exit(protocol.ExitError, errors.New("ui: --https-cert and --https-key go together"))
		}
		if !loopback(listen) && (certFile == "" || token == "") {
			return program.Exit(protocol.ExitError, fmt.Errorf("ui: --listen %s is not a loopback address: the dashboard shows the whole fleet, so it needs --https-cert/--https-key and --auth-token there", listen))
		}
		if sessionIdle <= 0 || sessionLifetime <= 0 {
			return program.Exit(protocol.ExitError, fmt.Errorf("ui: --session-idle %s and --session-lifetime %s must be longer than 0", sessionIdle, sessionLifetime))
		}
		trusted, err := trustedProxies(proxies)
		if err != nil {
			return program.Exit(protocol.ExitError, err)
		}
		opts := ui.Options{Log: a.Logger(), MaxRuns: maxRuns, AuthToken: token, SecureCookie: certFile != "",
			SessionIdle: sessionIdle, SessionLifetime: sessionLifetime, TrustedProxies: trusted}
		if err := opts.Validate(); err != nil {
			return program.Exit(protocol.ExitError, err)
		}
		ctx, stop := a.signalContext()
		defer stop()
		nc, err := a.connect(ctx, conn)
		if err != nil {
			return err
		}
		defer nc.Close()
		srv, err := ui.New(nc, opts)
		if err != nil {
			return program.Exit(protocol.ExitError, err)
		}
		l, err := net.Listen("tcp", listen)
		if err != nil {
			return program.Exit(protocol.ExitError, fmt.Errorf("ui: %w", err))
		}
		scheme := "http"
		if certFile != "" {
			scheme = "https"
		}
		fmt.Fprintf(a.Stdout, "CCM Fleet dashboard on %s://%s/ (Ctrl-C to stop)\n", scheme, l.Addr())
		return a.serveUI(ctx, l, srv, certFile, keyFile)
	})
}

// uiToken reads --auth-token's file: one line, at least ui.MinTokenLength
// characters; "" without the flag.
func uiToken(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("ui: --auth-token: %w", err)
	}
	token := strings.TrimSpace(string(b))
	if len(token) < ui.MinTokenLength || strings.ContainsAny(token, "\r\n") {
		return "", fmt.Errorf("ui: --auth-token %s: the token must be one line of at least %d characters", path, ui.MinTokenLength)
	}
	return token, nil
}

// loopback says whether a listen address only takes connections from this
// host: localhost or a loopback IP (":8080" listens everywhere).
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// serveUI serves the dashboard on l until ctx ends.
func (a *app) serveUI(ctx context.Context, l net.Listener, srv *ui.Server, certFile, keyFile string) error {
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
	var err error
	if certFile != "" {
		hs.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12}
		err = hs.ServeTLS(l, certFile, keyFile)
	} else {
		err = hs.Serve(l)
	}
	cancel()
	wg.Wait()
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return program.Exit(protocol.ExitError, fmt.Errorf("ui: %w", err))
	}
	return nil
}

// trustedProxies reads --trusted-proxy values: CIDRs, or single addresses
// (a /32 or /128).
func trustedProxies(values []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, v := range values {
		if p, err := netip.ParsePrefix(v); err == nil {
			if p.Masked() != p {
				return nil, fmt.Errorf("ui: --trusted-proxy %q has host bits set; did you mean %s?", v, p.Masked())
			}
			if p.Addr().Is4In6() {
				// Masked above, a mapped prefix is at least /96.
				p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
			}
			out = append(out, p)
			continue
		}
		a, err := netip.ParseAddr(v)
		if err != nil || a.Zone() != "" {
			return nil, fmt.Errorf("ui: --trusted-proxy %q is neither an IP address nor a CIDR such as 10.0.0.0/24", v)
		}
		a = a.Unmap()
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}
