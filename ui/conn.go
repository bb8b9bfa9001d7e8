package ui

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// NATS connection states the pages show.
const (
	// natsLive: connected; what the pages show is current.
	natsLive = "live"
	// natsReconnecting: the connection was lost and is being made again.
	natsReconnecting = "reconnecting"
	// natsDisconnected: the connection was lost and is not being made
	// again (closed).
	natsDisconnected = "disconnected"
)

// connState follows the dashboard's NATS connection: whether it is up,
// and since when it is not. While it is down the pages say that what they
// show is as of the moment it was lost.
type connState struct {
	log *slog.Logger
	now func() time.Time

	// mu guards the fields below.
	mu    sync.RWMutex
	state string
	// since is when the connection was lost; zero while it is up.
	since time.Time
	// version counts the changes of state.
	version uint64
}

func newConnState(log *slog.Logger, now func() time.Time) *connState {
	return &connState{log: log, now: now, state: natsLive}
}

// stateOf names a nats.go status as the pages do.
func stateOf(st nats.Status) string {
	switch st {
	case nats.CONNECTED:
		return natsLive
	case nats.CLOSED, nats.DISCONNECTED:
		return natsDisconnected
	}
	return natsReconnecting // RECONNECTING, CONNECTING, draining
}

// follow keeps the state in step with nc until ctx ends, calling changed
// after each change.
func (c *connState) follow(ctx context.Context, nc *nats.Conn, changed func()) {
	ch := nc.StatusChanged()
	defer nc.RemoveStatusListener(ch)
	c.set(nc.Status(), changed)
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-ch:
			if !ok {
				return
			}
			// The event may be older than the status now: read it.
			c.set(nc.Status(), changed)
		}
	}
}

// set takes the connection's status, logging a loss (WARN) and a return
// (INFO).
func (c *connState) set(st nats.Status, changed func()) {
	state := stateOf(st)
	c.mu.Lock()
	if state == c.state {
		c.mu.Unlock()
		return
	}
	now := c.now()
	was, since := c.state, c.since
	c.state = state
	switch {
	case state == natsLive:
		c.since = time.Time{}
	case was == natsLive:
		c.since = now
	}
	c.version++
	c.mu.Unlock()
	switch {
	case state == natsLive:
		c.log.Info("ui: the connection to NATS is back; the pages are current again", "lost_for", now.Sub(since).Round(time.Millisecond).String())
	case was == natsLive:
		c.log.Warn("ui: lost the connection to NATS; the pages show what was held then", "state", state, "nats_status", st.String())
	default:
		c.log.Warn("ui: still no connection to NATS", "state", state, "nats_status", st.String(), "since", since.UTC().Format(time.RFC3339))
	}
	changed()
}

// get returns the state and, when the connection is not up, since when.
func (c *connState) get() (state string, since time.Time) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.state, c.since
}

// stamp changes whenever the state does.
func (c *connState) stamp() uint64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.version
}

// natsView is the connection's state as the layout shows it.
type natsView struct {
	State string
	// Since is when the connection was lost; zero while it is up.
	Since time.Time
}

// Lost says whether what the page shows may be out of date.
func (v natsView) Lost() bool { return v.State != natsLive }

// Badge is the badge's text: "live", "reconnecting since T" or
// "disconnected since T".
func (v natsView) Badge() string {
	if !v.Lost() {
		return v.State
	}
	return v.State + " since " + v.Since.UTC().Format("15:04:05") + " UTC"
}
