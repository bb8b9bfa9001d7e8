package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// DefaultReadyTimeout bounds how long Start and Restart wait for the server
// to accept clients when the context has no earlier deadline.
const DefaultReadyTimeout = 10 * time.Second

// readyPoll is how often the start wait looks at the context and at fatal
// server errors between readiness checks.
const readyPoll = 100 * time.Millisecond

// Broker is one embedded nats-server with JetStream. Its methods are safe for
// concurrent use.
type Broker struct {
	cfg          Config
	log          *slog.Logger
	readyTimeout time.Duration
	storeCheck   time.Duration // how often the store's usage is checked

	// guards every field below
	mu          sync.Mutex
	srv         *server.Server
	stopping    chan struct{} // closed when a shutdown that outlived its ctx ends
	storeDir    string        // JetStream store of the current run
	tempStore   bool          // storeDir was created by Start and is removed by Shutdown
	clientPort  int           // resolved client port, reused by Restart
	clusterPort int           // resolved route port, reused by Restart
	leafPort    int           // resolved leaf node port of a hub, reused by Restart
	noJetStream bool          // the current run has JetStream off (RestartJetStream)
	auth        *AuthFile     // users in force, nil without Config.AuthFile
	internalPW  string        // password of internalUser while auth is on
	anonymousPW string        // password of anonymousUser (a hub without auth)
	storeLimit  int64         // JetStream file store limit of the current run; 0: none
	watch       *storeWatch   // the store usage check of the current run
}

// WithStoreCheckInterval replaces DefaultStoreCheckInterval.
func WithStoreCheckInterval(d time.Duration) Option {
	return func(b *Broker) {
		if d > 0 {
			b.storeCheck = d
		}
	}
}

// WithReadyTimeout replaces DefaultReadyTimeout.
func WithReadyTimeout(d time.Duration) Option {
	return func(b *Broker) {
		if d > 0 {
			b.readyTimeout = d
		}
	}
}

// New validates cfg and returns a broker that is not started yet.
func New(cfg Config, opts ...Option) (*Broker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	b := &Broker{
		cfg:          cfg.withDefaults(),
		log:          slog.New(slog.DiscardHandler),
		readyTimeout: DefaultReadyTimeout,
		storeCheck:   DefaultStoreCheckInterval,
	}
	for _, o := range opts {
		o(b)
	}
	return b, nil
}

// Start starts the server and waits until it accepts clients with JetStream
// enabled, bounded by ctx and the ready timeout. It creates a temporary store
// when Config.StoreDir is empty. Errors wrap ErrAlreadyRunning or ErrNotReady,
// or name the store or TLS file that could not be used.
func (b *Broker) Start(ctx context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.srv != nil {
		return ErrAlreadyRunning
	}
	if err := b.waitStoppingLocked(ctx); err != nil {
		return err
	}
	if err := b.loadAuthLocked(); err != nil {
		return err
	}

	dir, temp := b.cfg.StoreDir, false
	if dir == "" {
		d, err := os.MkdirTemp("", "ccm-broker-")
		if err != nil {
			return fmt.Errorf("broker store: %w", err)
		}
		dir, temp = d, true
	} else if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("broker store %s: %w", dir, err)
	}

	if err := b.startLocked(ctx, dir, 0, 0, 0); err != nil {
		if temp {
			_ = os.RemoveAll(dir)
		}
		return err
	}
	b.storeDir, b.tempStore = dir, temp
	return nil
}

// Restart shuts the running server down and starts it again on the same
// client and route ports with the same JetStream store, for fault tests.
// Connected clients see a disconnect and reconnect. It returns ErrNotRunning
// when the broker is not running.
func (b *Broker) Restart(ctx context.Context) error {
	return b.RestartJetStream(ctx, true)
}

// RestartJetStream is Restart with JetStream on or off in the new run: off,
// clients reconnect to a server without JetStream (its store is kept for
// the next run with it on), so fault tests can show what clients do when
// JetStream is unavailable.
func (b *Broker) RestartJetStream(ctx context.Context, enabled bool) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.srv == nil {
		return ErrNotRunning
	}
	b.noJetStream = !enabled
	if err := b.stopLocked(ctx, ""); err != nil {
		return fmt.Errorf("broker restart: %w", err)
	}

	b.log.Info("broker restarting", "port", b.clientPort, "store", b.storeDir)
	if err := b.startLocked(ctx, b.storeDir, b.clientPort, b.clusterPort, b.leafPort); err != nil {
		return fmt.Errorf("broker restart: %w", err)
	}
	return nil
}

// Shutdown stops the server, waits for it to finish (bounded by ctx) and
// removes the store when Start created it. It is a no-op when not running.
func (b *Broker) Shutdown(ctx context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.srv == nil {
		return nil
	}
	remove := ""
	if b.tempStore {
		remove = b.storeDir
	}
	err := b.stopLocked(ctx, remove)
	b.storeDir, b.tempStore, b.noJetStream = "", false, false
	b.clientPort, b.clusterPort, b.leafPort = 0, 0, 0
	if err != nil {
		return fmt.Errorf("broker shutdown: %w", err)
	}
	b.log.Info("broker stopped")
	return nil
}

// Run starts the broker, blocks until ctx is done, then shuts it down
// (allowing DefaultReadyTimeout for that). It returns nil after a clean stop.
func (b *Broker) Run(ctx context.Context) error {
	if err := b.Start(ctx); err != nil {
		return err
	}
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), DefaultReadyTimeout)
	defer cancel()
	return b.Shutdown(sctx)
}

// ClientURL returns the URL clients connect to (tls:// when TLS is on), with
// the port actually bound; "" when the broker is not running. It stays the
// same across Restart.
func (b *Broker) ClientURL() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.srv == nil {
		return ""
	}
	host, _, _ := parseListen(b.cfg.Listen)
	scheme := "nats"
	if b.cfg.TLS.Enabled() {
		scheme = "tls"
	}
	u := url.URL{Scheme: scheme, Host: net.JoinHostPort(loopbackFor(host), strconv.Itoa(b.clientPort))}
	return u.String()
}

// RouteURL returns the nats-route:// URL peers route to, with the port
// actually bound; "" when the broker is not running or not clustered.
func (b *Broker) RouteURL() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.srv == nil || b.cfg.Cluster.Listen == "" {
		return ""
	}
	host, _, _ := parseListen(b.cfg.Cluster.Listen)
	u := url.URL{Scheme: "nats-route", Host: net.JoinHostPort(loopbackFor(host), strconv.Itoa(b.clusterPort))}
	return u.String()
}

// loopbackFor maps a wildcard listen host to the matching loopback address.
func loopbackFor(host string) string {
	switch host {
	case "", "0.0.0.0":
		return "127.0.0.1"
	case "::":
		return "::1"
	}
	return host
}

// StoreDir returns the JetStream store directory of the running broker, or
// "" when it is not running.
func (b *Broker) StoreDir() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.storeDir
}

// startLocked starts a server on dir and waits until it is ready.
func (b *Broker) startLocked(ctx context.Context, dir string, clientPort, clusterPort, leafPort int) error {
	b.storeLimit = 0
	if !b.noJetStream {
		if err := b.chooseStoreLimitLocked(dir); err != nil {
			return err
		}
	}
	opts, err := b.optionsLocked(dir, clientPort, clusterPort, leafPort)
	if err != nil {
		return err
	}
	if b.noJetStream {
		opts.JetStream = false
	}
	s, err := server.NewServer(opts)
	if err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	sl := newServerLog(b.log, b.cfg.ServerLog)
	s.SetLoggerV2(sl, false, false, false)
	s.Start()

	if err := b.waitReady(ctx, s, sl); err != nil {
		s.Shutdown()
		s.WaitForShutdown()
		return err
	}

	b.srv = s
	if a, ok := s.Addr().(*net.TCPAddr); ok {
		b.clientPort = a.Port
	}
	if a := s.ClusterAddr(); a != nil {
		b.clusterPort = a.Port
	}
	b.leafPort = boundLeafPort(s)
	b.log.Info("broker started", "port", b.clientPort, "store", dir, "server", s.Name())
	if !b.noJetStream {
		b.startStoreWatchLocked(s)
	}
	return nil
}

// waitReady waits until s accepts clients and has JetStream, bounded by ctx
// and the ready timeout; a fatal server error ends the wait at once.
func (b *Broker) waitReady(ctx context.Context, s *server.Server, sl *serverLog) error {
	bound := b.readyTimeout
	if d, ok := ctx.Deadline(); ok {
		bound = min(bound, time.Until(d))
	}
	deadline := time.Now().Add(bound)
	for {
		if msg := sl.fatalError(); msg != "" {
			return fmt.Errorf("%w: %s", ErrNotReady, msg)
		}
		if s.ReadyForConnections(min(readyPoll, max(time.Until(deadline), time.Millisecond))) {
			if !b.noJetStream && !s.JetStreamEnabled() {
				return fmt.Errorf("%w: JetStream did not start: %s", ErrNotReady, orNone(sl.lastError()))
			}
			return nil
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("%w: %w", ErrNotReady, err)
		}
		if !time.Now().Before(deadline) {
			return fmt.Errorf("%w: not accepting clients after %s (last server error: %s)",
				ErrNotReady, bound.Round(time.Millisecond), orNone(sl.lastError()))
		}
	}
}

// stopLocked shuts the server down and waits, bounded by ctx; when ctx ends
// first the shutdown (and removal of remove, if set) finishes in the
// background and the next Start waits for it.
func (b *Broker) stopLocked(ctx context.Context, remove string) error {
	b.stopStoreWatchLocked()
	s := b.srv
	b.srv = nil
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Shutdown()
		s.WaitForShutdown()
		if remove != "" {
			if err := os.RemoveAll(remove); err != nil {
				b.log.Warn("broker could not remove its temporary store", "store", remove, "error", err)
			}
		}
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		b.stopping = done
		return ctx.Err()
	}
}

// waitStoppingLocked waits for a shutdown that outlived its context.
func (b *Broker) waitStoppingLocked(ctx context.Context) error {
	if b.stopping == nil {
		return nil
	}
	select {
	case <-b.stopping:
		b.stopping = nil
		return nil
	case <-ctx.Done():
		return fmt.Errorf("broker: previous shutdown still running: %w", errors.Join(ErrNotReady, ctx.Err()))
	}
}
