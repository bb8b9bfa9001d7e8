package ui

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// MaxLiveClients bounds the pages following live updates at once.
const MaxLiveClients = 256

// hub tells open pages that something changed, at most once per interval:
// each page then fetches its own content again. A page that cannot keep
// up misses updates, never blocks the others: the next update says the
// same thing ("changed").
type hub struct {
	stamp    func() uint64
	interval time.Duration

	mu      sync.Mutex
	clients map[chan uint64]struct{}
}

func newHub(stamp func() uint64, interval time.Duration) *hub {
	return &hub{stamp: stamp, interval: interval, clients: map[chan uint64]struct{}{}}
}

// run forwards changes to the clients, coalesced to one per interval,
// until ctx ends.
func (h *hub) run(ctx context.Context, changed <-chan struct{}) {
	var last time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-changed:
		}
		if wait := h.interval - time.Since(last); wait > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
		}
		last = time.Now()
		v := h.stamp()
		h.mu.Lock()
		for c := range h.clients {
			select {
			case c <- v:
			default: // it has an update pending already
			}
		}
		h.mu.Unlock()
	}
}

// serve streams updates to one page as server-sent events.
func (h *hub) serve(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	c := make(chan uint64, 1)
	h.mu.Lock()
	if len(h.clients) >= MaxLiveClients {
		h.mu.Unlock()
		http.Error(w, "too many live pages", http.StatusServiceUnavailable)
		return
	}
	h.clients[c] = struct{}{}
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		delete(h.clients, c)
		h.mu.Unlock()
	}()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	fmt.Fprintf(w, "retry: 2000\nevent: hello\ndata: %d\n\n", h.stamp())
	flusher.Flush()
	keepalive := time.NewTicker(15 * time.Second)
	defer keepalive.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case v := <-c:
			fmt.Fprintf(w, "event: changed\ndata: %d\n\n", v)
		case <-keepalive.C:
			fmt.Fprint(w, ": keepalive\n\n")
		}
		flusher.Flush()
	}
}
