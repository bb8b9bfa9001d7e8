package urlscope

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Guard judges the URLs fetched for one signer: Deny prefixes refuse what
// they hold; with Allow set only what an Allow prefix holds is fetched,
// else any URL except those whose host is (or, dialled, resolves to) a
// loopback, link-local, unspecified or cloud metadata address. Such an
// address is allowed only by an Allow prefix naming it explicitly. The
// zero Guard applies the default refusals.
type Guard struct {
	Allow, Deny []Prefix
	// Named are prefixes the host's own configuration names (a manifest
	// source, the external data URL): they restrict nothing, but their
	// host and port are fetched whatever address they are or resolve to
	// (loopback, link-local and metadata addresses included). See
	// Configured.
	Named []Prefix
	// Who names whose scopes these are in refusals: "signer web".
	Who string
}

// Verdict is one judgement of a URL.
type Verdict struct {
	Allowed bool
	// Rule is the rule that decided, as written: `net.urls[0]
	// "https://repo/releases/"`, `net.urls (not set)`.
	Rule string
	// Reason adds why, when the rule alone does not say it.
	Reason string
}

// Judge decides the URL raw.
func (g *Guard) Judge(raw string) Verdict {
	t, err := parseTarget(raw)
	if err != nil {
		return Verdict{Rule: RuleAllow, Reason: err.Error()}
	}
	for _, p := range g.Deny {
		if p.holds(t) {
			return Verdict{Rule: p.String()}
		}
	}
	if len(g.Allow) == 0 {
		if kind := t.special(); kind != "" {
			for _, p := range g.Named {
				if p.holds(t) {
					return Verdict{Allowed: true, Rule: p.String()}
				}
			}
			return Verdict{Rule: ruleUnset, Reason: fmt.Sprintf("%s is a %s address: only a net.urls prefix naming it allows it", t.host, kind)}
		}
		return Verdict{Allowed: true, Rule: RuleAllow + " (not restricted)"}
	}
	for _, p := range g.Allow {
		if p.holds(t) {
			return Verdict{Allowed: true, Rule: p.String()}
		}
	}
	return Verdict{Rule: RuleAllow + " (no prefix holds it: default deny)"}
}

// JudgeDial decides an address dialled for a URL whose host and port
// (as in the URL) are host and port: one that Special names is refused
// unless an Allow prefix for that host and port names it explicitly, or
// a Named prefix is at that host and port.
func (g *Guard) JudgeDial(host, port string, ip netip.Addr) error {
	kind := Special(ip)
	if kind == "" {
		return nil
	}
	h, _, err := normHost(host)
	if err == nil {
		for _, p := range g.Allow {
			if p.t.host == h && p.t.port == port && p.names(ip) {
				return nil
			}
		}
		// The host's own configuration chose this host: it may resolve
		// to any address.
		for _, p := range g.Named {
			if p.t.host == h && p.t.port == port {
				return nil
			}
		}
	}
	rule := ruleUnset
	if len(g.Allow) > 0 {
		rule = RuleAllow + " (no prefix names this address)"
	}
	return &RefusedError{Who: g.Who, URL: net.JoinHostPort(host, port), Verdict: Verdict{Rule: rule,
		Reason: fmt.Sprintf("it is dialled at %s, a %s address: only a net.urls prefix naming it allows it", ip.Unmap(), kind)}}
}

// Configured is the guard of a URL the host's own configuration names
// (a manifest source, the external data URL), who naming it: the URL is
// fetched as configured, even at (or resolving to) a loopback address,
// but a redirect or a name that leads to a loopback, link-local or
// metadata address at another scheme, host or port is refused.
func Configured(raw, who string) *Guard {
	g := &Guard{Who: who}
	if t, err := parseTarget(raw); err == nil {
		t.path = nil
		g.Named = []Prefix{{Rule: who, Raw: t.origin() + "/", t: t}}
	}
	return g
}

// RefusedError is a URL, or an address dialled for one, that a Guard
// refused; it matches ErrRefused.
type RefusedError struct {
	Who, URL string
	Verdict
}

func (e *RefusedError) Error() string {
	s := fmt.Sprintf("denied url %q by %s", e.URL, e.Rule)
	if e.Who != "" {
		s = e.Who + ": " + s
	}
	if e.Reason != "" {
		s += ": " + e.Reason
	}
	return s
}

// Is reports whether target is ErrRefused.
func (e *RefusedError) Is(target error) bool { return target == ErrRefused }

// Check judges the URL raw by every guard of gs; shown is how errors name
// it (without a password).
func Check(gs []*Guard, raw, shown string) error {
	for _, g := range gs {
		if v := g.Judge(raw); !v.Allowed {
			return &RefusedError{Who: g.Who, URL: shown, Verdict: v}
		}
	}
	return nil
}

type ctxKey struct{}

// WithGuards returns ctx carrying gs besides the guards it already
// carries: a fetch in that context must pass every one.
func WithGuards(ctx context.Context, gs ...*Guard) context.Context {
	if len(gs) == 0 {
		return ctx
	}
	all := append(append([]*Guard(nil), Guards(ctx)...), gs...)
	return context.WithValue(ctx, ctxKey{}, all)
}

// Guards are the guards ctx carries; none when what is fetched is not
// judged (the host's own configuration and manifests).
func Guards(ctx context.Context) []*Guard {
	gs, _ := ctx.Value(ctxKey{}).([]*Guard)
	return gs
}

// defaultRedirects is how many redirects a guarded client follows when
// its base client says nothing.
const defaultRedirects = 10

// Client returns base as it must fetch under the guards gs (base itself
// when there are none): every redirect hop is judged before it is
// requested, and every address dialled is judged after the name is
// resolved (so a name that resolves to a loopback address is refused
// unless a prefix names that address). Connections are not kept for
// reuse, and no proxy is used: a proxy would dial the address in its
// place. base's transport must be an *http.Transport (or nil).
func Client(base *http.Client, gs []*Guard) (*http.Client, error) {
	if len(gs) == 0 {
		return base, nil
	}
	if base == nil {
		base = &http.Client{}
	}
	var tr *http.Transport
	switch rt := base.Transport.(type) {
	case nil:
		tr = http.DefaultTransport.(*http.Transport).Clone()
	case *http.Transport:
		tr = rt.Clone()
	default:
		return nil, fmt.Errorf("%w: the HTTP client's transport (%T) cannot judge the addresses it dials", ErrRefused, rt)
	}
	tr.DisableKeepAlives = true
	tr.DialTLSContext = nil
	// A proxy the host is configured with (HTTP_PROXY, ...) is dialled
	// in the target's place: it is the host's own, not judged; the URLs
	// asked of it are.
	var proxies sync.Map
	if proxy := tr.Proxy; proxy != nil {
		tr.Proxy = func(req *http.Request) (*url.URL, error) {
			u, err := proxy(req)
			if u != nil {
				port := u.Port()
				if port == "" {
					port = map[string]string{"https": "443", "socks5": "1080", "socks5h": "1080"}[u.Scheme]
					if port == "" {
						port = "80"
					}
				}
				proxies.Store(net.JoinHostPort(u.Hostname(), port), true)
			}
			return u, err
		}
	}
	plain := net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if _, ok := proxies.Load(addr); ok {
			return plain.DialContext(ctx, network, addr)
		}
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		d := net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second,
			Control: func(_, address string, _ syscall.RawConn) error {
				ap, err := netip.ParseAddrPort(address)
				if err != nil {
					return fmt.Errorf("%w: dialled address %q", ErrRefused, address)
				}
				for _, g := range gs {
					if err := g.JudgeDial(host, port, ap.Addr()); err != nil {
						return err
					}
				}
				return nil
			}}
		return d.DialContext(ctx, network, addr)
	}
	next := base.CheckRedirect
	return &http.Client{
		Transport: tr,
		Jar:       base.Jar,
		Timeout:   base.Timeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if err := Check(gs, req.URL.String(), Redacted(req.URL.String())); err != nil {
				return fmt.Errorf("redirect: %w", err)
			}
			if next != nil {
				return next(req, via)
			}
			if len(via) >= defaultRedirects {
				return fmt.Errorf("stopped after %d redirects", defaultRedirects)
			}
			return nil
		},
	}, nil
}

// Redacted is raw without its user information (a user name and
// password).
func Redacted(raw string) string {
	a := authority(raw)
	at := strings.LastIndexByte(a, '@')
	if at < 0 {
		return raw
	}
	return strings.Replace(raw, a, a[at+1:], 1)
}

// IsRefused reports whether err is a refusal of a URL or address.
func IsRefused(err error) bool { return errors.Is(err, ErrRefused) }

// JudgeAddress decides a network address dialled directly, not fetched
// (a goss addr rule): raw is tcp://HOST:PORT or udp://HOST:PORT. A deny
// prefix at that host and port refuses it; with Allow set, an allow
// prefix at that host and port (any scheme, any path) allows it, none
// being a refusal; else it is allowed unless its host is a loopback,
// link-local, unspecified or cloud metadata address or name. The host is
// judged as written: a name is not resolved.
func (g *Guard) JudgeAddress(raw string) Verdict {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "tcp" && u.Scheme != "udp") {
		return Verdict{Rule: RuleAllow, Reason: "not a tcp:// or udp:// address"}
	}
	var t target
	if t.host, t.ip, err = normHost(u.Hostname()); err == nil {
		t.port, err = normPort(u.Port(), "")
	}
	if err != nil || u.Port() == "" {
		return Verdict{Rule: RuleAllow, Reason: "the address needs a host and a port"}
	}
	at := func(p Prefix) bool { return p.t.host == t.host && p.t.port == t.port }
	for _, p := range g.Deny {
		if at(p) {
			return Verdict{Rule: p.String()}
		}
	}
	if len(g.Allow) == 0 {
		if kind := t.special(); kind != "" {
			return Verdict{Rule: ruleUnset, Reason: fmt.Sprintf("%s is a %s address: only a net.urls prefix naming it allows it", t.host, kind)}
		}
		return Verdict{Allowed: true, Rule: RuleAllow + " (not restricted)"}
	}
	for _, p := range g.Allow {
		if at(p) {
			return Verdict{Allowed: true, Rule: p.String()}
		}
	}
	return Verdict{Rule: RuleAllow + " (no prefix at this host and port: default deny)"}
}
