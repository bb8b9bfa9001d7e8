package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ccm-fleet/ccm/broker"
	"github.com/ccm-fleet/ccm/jsstore"
	"github.com/ccm-fleet/ccm/protocol"
)

// Timeouts of the bench's own waits (never part of a measurement).
const (
	startTimeout  = 10 * time.Minute
	stopTimeout   = 2 * time.Minute
	roundTimeout  = 2 * time.Minute
	settleTimeout = 2 * time.Minute
	settlePoll    = 2 * time.Millisecond
)

// site is an embedded broker with the history stream and the node
// registry, and the bench's connection to it.
type site struct {
	b   *broker.Broker
	url string
	nc  *nats.Conn
	js  jetstream.JetStream
	// history counts the records the stream should hold once every
	// reply of the runs so far was written.
	history uint64
	// dir, when set, is removed by stop
	dir string
}

// openSite makes a fresh directory called name below the work directory
// and starts a broker with its store there; stop removes both.
func (b *bencher) openSite(ctx context.Context, name string, registryTTL time.Duration) (*site, string, error) {
	dir, err := b.dir(name)
	if err != nil {
		return nil, "", err
	}
	s, err := b.startSite(ctx, dir, registryTTL)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, "", err
	}
	s.dir = dir
	return s, dir, nil
}

// startSite starts a broker with its store below dir.
func (b *bencher) startSite(ctx context.Context, dir string, registryTTL time.Duration) (*site, error) {
	br, err := broker.New(broker.Config{Listen: "127.0.0.1:-1", StoreDir: filepath.Join(dir, "store")})
	if err != nil {
		return nil, fmt.Errorf("bench broker: %w", err)
	}
	if err := br.Start(ctx); err != nil {
		return nil, fmt.Errorf("bench broker: %w", err)
	}
	s := &site{b: br, url: br.ClientURL()}
	s.nc, err = nats.Connect(s.url, nats.Name("ccm-bench"), nats.MaxReconnects(-1))
	if err != nil {
		s.stop()
		return nil, fmt.Errorf("bench: %w", err)
	}
	s.js, err = jetstream.New(s.nc)
	if err != nil {
		s.stop()
		return nil, fmt.Errorf("bench: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if _, err := jsstore.EnsureHistory(pctx, s.js, jsstore.HistoryConfig{}); err != nil {
		s.stop()
		return nil, fmt.Errorf("bench: %w", err)
	}
	if _, err := jsstore.EnsureRegistry(pctx, s.js, jsstore.RegistryConfig{TTL: registryTTL}); err != nil {
		s.stop()
		return nil, fmt.Errorf("bench: %w", err)
	}
	return s, nil
}

// stop closes the connection and shuts the broker down.
func (s *site) stop() {
	if s.nc != nil {
		s.nc.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	_ = s.b.Shutdown(ctx)
	if s.dir != "" {
		_ = os.RemoveAll(s.dir)
	}
}

// historyMsgs is how many records the history stream holds.
func (s *site) historyMsgs(ctx context.Context) (uint64, error) {
	st, err := s.js.Stream(ctx, protocol.HistoryStream)
	if err != nil {
		return 0, err
	}
	return st.CachedInfo().State.Msgs, nil
}

// settle waits until the history stream holds s.history records (every
// reply so far recorded) and returns when that was, so runs do not
// overlap with the previous run's history writes. When they never all
// arrive it adopts the stream's count and reports an error.
func (s *site) settle(ctx context.Context) (time.Time, error) {
	deadline := time.Now().Add(settleTimeout)
	for {
		n, err := s.historyMsgs(ctx)
		if err == nil && n >= s.history {
			return time.Now(), nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			err = fmt.Errorf("history holds %d records, %d expected: %v", n, s.history, err)
			s.history = n
			return time.Now(), err
		}
		// Poll fast at first, when the records are about to land, then
		// gently, so a wait that drags on does not load the broker.
		if time.Until(deadline) > settleTimeout-time.Second {
			time.Sleep(settlePoll)
		} else {
			time.Sleep(50 * settlePoll)
		}
	}
}

// floorSubject is what the floor's responders listen on.
const floorSubject = "bench.floor"

// floorRound publishes one request-sized message and waits for n replies,
// returning the time from the publish to the n-th reply.
func (s *site) floorRound(ctx context.Context, request []byte, n int) (time.Duration, error) {
	inbox := s.nc.NewInbox()
	var got atomic.Int64
	done := make(chan struct{})
	sub, err := s.nc.Subscribe(inbox, func(*nats.Msg) {
		if got.Add(1) == int64(n) {
			close(done)
		}
	})
	if err != nil {
		return 0, err
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := sub.SetPendingLimits(-1, -1); err != nil {
		return 0, err
	}
	if err := s.nc.Flush(); err != nil {
		return 0, err
	}
	start := time.Now()
	if err := s.nc.PublishMsg(&nats.Msg{Subject: floorSubject, Reply: inbox, Data: request}); err != nil {
		return 0, err
	}
	t := time.NewTimer(roundTimeout)
	defer t.Stop()
	select {
	case <-done:
		return time.Since(start), nil
	case <-t.C:
		return 0, fmt.Errorf("floor: %d of %d replies after %s", got.Load(), n, roundTimeout)
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// startResponders starts the floor's responders as a child process.
func (b *bencher) startResponders(ctx context.Context, url string, n int) (*child, error) {
	c, err := startChild(fmt.Sprintf("%d floor responders", n), respondersReady, b.cfg.BenchBin,
		RespondersCommand, "--server", url, "--count", strconv.Itoa(n),
		"--subject", floorSubject, "--reply-bytes", strconv.Itoa(b.replyBytes))
	if err != nil {
		return nil, err
	}
	if err := c.waitReady(ctx, startTimeout); err != nil {
		c.stop(stopTimeout)
		return nil, err
	}
	return c, nil
}

// agentsReady is what ccm-agent simulate prints once every agent serves.
const agentsReady = "simulated agents serving"

// startAgents starts n simulated agents (ccm-agent simulate) as a child
// process with their state below dir, and returns how long they took to
// serve.
func (b *bencher) startAgents(ctx context.Context, url, dir string, n int) (*child, time.Duration, error) {
	args := []string{"simulate", "--server", url, "--count", strconv.Itoa(n),
		"--state-dir", filepath.Join(dir, "state"), "--vary", "os=debian,rhel", "--vary", "role=web,db,cache", "--policy", b.sign.policyFile}
	if b.cfg.ProfileDir != "" {
		args = append(args, "--cpuprofile", filepath.Join(b.cfg.ProfileDir, fmt.Sprintf("agents-%d.pprof", n)))
	}
	start := time.Now()
	c, err := startChild(fmt.Sprintf("%d simulated agents", n), agentsReady, b.cfg.AgentBin, args...)
	if err != nil {
		return nil, 0, err
	}
	if err := c.waitReady(ctx, startTimeout); err != nil {
		c.stop(stopTimeout)
		return nil, 0, err
	}
	return c, time.Since(start), nil
}
