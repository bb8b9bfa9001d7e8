package ui

import (
	"container/list"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"
)

// Login throttling: each client (remote address) may give a few wrong
// tokens; after that every further attempt is refused, without looking at
// the token, until a delay that doubles with each wrong token has passed.
const (
	// loginFreeFailures is how many wrong tokens a client may give before
	// it has to wait.
	loginFreeFailures = 5
	// loginBaseDelay is the wait after the first wrong token past the free
	// ones; each further one doubles it.
	loginBaseDelay = time.Second
	// loginMaxDelay is the longest wait.
	loginMaxDelay = 15 * time.Minute
	// loginForget is how long after its last wrong token a client's
	// failures are forgotten (longer than loginMaxDelay).
	loginForget = time.Hour
	// DefaultMaxLoginClients is how many clients' failures are remembered
	// by default.
	DefaultMaxLoginClients = 10000
)

// throttle remembers the wrong tokens of the most recently failing clients.
type throttle struct {
	now func() time.Time
	max int

	mu sync.Mutex
	// guards clients and order
	clients map[string]*list.Element
	// order holds *failures, the least recent failure first.
	order *list.List
}

// failures is one client's record of wrong tokens.
type failures struct {
	client string
	count  int
	last   time.Time
	// until is when the client may try again.
	until time.Time
}

func newThrottle(now func() time.Time, max int) *throttle {
	return &throttle{now: now, max: max, clients: map[string]*list.Element{}, order: list.New()}
}

// attempt judges one try by client with check, which compares the token
// given. While the client must still wait, check is not called and attempt
// returns how long is left; otherwise it returns check's answer and wait 0.
// A wrong token counts against the client, a right one clears its record.
// The lock is held across check so that tries sent at once are counted
// one after the other.
func (t *throttle) attempt(client string, check func() bool) (ok bool, wait time.Duration, failed int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	t.forgetLocked(now)
	e := t.clients[client]
	if e != nil {
		if f := e.Value.(*failures); now.Before(f.until) {
			return false, f.until.Sub(now), f.count
		}
	}
	if check() {
		if e != nil {
			t.removeLocked(e)
		}
		return true, 0, 0
	}
	if e == nil {
		for t.order.Len() >= t.max {
			t.removeLocked(t.order.Front())
		}
		e = t.order.PushBack(&failures{client: client})
		t.clients[client] = e
	}
	f := e.Value.(*failures)
	f.count++
	f.last = now
	f.until = now.Add(loginDelay(f.count))
	t.order.MoveToBack(e)
	return false, 0, f.count
}

// forgetLocked drops the records whose last wrong token is loginForget
// old: the list is in order of last failure.
func (t *throttle) forgetLocked(now time.Time) {
	for e := t.order.Front(); e != nil; e = t.order.Front() {
		if f := e.Value.(*failures); now.Sub(f.last) < loginForget {
			return
		}
		t.removeLocked(e)
	}
}

func (t *throttle) removeLocked(e *list.Element) {
	delete(t.clients, e.Value.(*failures).client)
	t.order.Remove(e)
}

// loginDelay is the wait after a client's count-th wrong token.
func loginDelay(count int) time.Duration {
	past := count - loginFreeFailures
	if past <= 0 {
		return 0
	}
	d := loginBaseDelay
	for range past - 1 {
		if d *= 2; d >= loginMaxDelay {
			return loginMaxDelay
		}
	}
	return d
}

// clientOf names the client of r for throttling: its remote IP address
// (an IPv6 address by its /64, which one machine usually holds whole).
// X-Forwarded-For is read only when the remote address is one of the
// trusted proxies: then the client is the right-most address of the header
// that is not itself a trusted proxy (what the nearest proxy saw, since a
// client can write anything to the left of it). A header that cannot be read
// leaves the proxy's own address. Anyone else's forwarding headers are not
// read: anyone could set them.
func clientOf(r *http.Request, trusted []netip.Prefix) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	addr = addr.Unmap().WithZone("")
	if isTrusted(addr, trusted) {
		if fwd, ok := forwardedClient(r.Header.Values("X-Forwarded-For"), trusted); ok {
			addr = fwd
		}
	}
	if addr.Is6() {
		if p, err := addr.Prefix(64); err == nil {
			return p.String()
		}
	}
	return addr.String()
}

// forwardedClient reads X-Forwarded-For from the right: the first address
// that is not a trusted proxy. A hop that is not an IP address ends the
// search without an answer.
func forwardedClient(headers []string, trusted []netip.Prefix) (netip.Addr, bool) {
	var hops []string
	for _, h := range headers {
		hops = append(hops, strings.Split(h, ",")...)
	}
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			return netip.Addr{}, false
		}
		a = a.Unmap().WithZone("")
		if !isTrusted(a, trusted) {
			return a, true
		}
	}
	return netip.Addr{}, false
}

func isTrusted(a netip.Addr, trusted []netip.Prefix) bool {
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
