package ui

import (
	"cmp"
	"context"
	"embed"
	"fmt"
	"github.com/ccm-fleet/ccm/registration"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Options configure a Server.
type Options struct {
	// Log receives the followers' warnings, the losing (WARN) and
	// regaining (INFO) of NATS, and one INFO line per request answered
	// (method, path without its query, status code, duration); nil
	// discards them.
	Log *slog.Logger
	// MaxRuns bounds the runs kept in memory (default
	// orchestrator.DefaultIndexRuns).
	MaxRuns int
	// LiveInterval is the least time between two live updates sent to
	// a page (default 1s).
	LiveInterval time.Duration
	// Now is the clock, for tests; default time.Now.
	Now func() time.Time
	// AuthToken, when set (at least MinTokenLength characters), is needed
	// by every request: as "Authorization: Bearer TOKEN", or typed in once
	// at /login, which starts a session kept in a cookie.
	AuthToken string
	// SecureCookie marks the session cookie Secure (served over HTTPS
	// behind something that terminates TLS; a request that arrives over
	// TLS gets it anyway).
	SecureCookie bool
	// SessionIdle ends a login session not used for this long (default
	// DefaultSessionIdle).
	SessionIdle time.Duration
	// SessionLifetime ends a login session this long after its login,
	// used or not (default DefaultSessionLifetime).
	SessionLifetime time.Duration
	// MaxSessions bounds the login sessions held; a login beyond it ends
	// the least recently used one (default DefaultMaxSessions).
	MaxSessions int
	// MaxLoginClients bounds the clients whose wrong tokens are
	// remembered for throttling; beyond it the one that failed longest
	// ago is forgotten (default DefaultMaxLoginClients).
	MaxLoginClients int
	// TrustedProxies are the reverse proxies in front of the dashboard: a
	// request from one of them is throttled by the client its
	// X-Forwarded-For names, not by the proxy's address (which would make
	// every client share one count). Nobody else's header is read.
	TrustedProxies []netip.Prefix
}

// Server is the dashboard: an http.Handler over the fleet's registry and
// history, kept up to date by Run.
type Server struct {
	nc *nats.Conn
	js jetstream.JetStream
	// conn says whether nc is up, and since when it is not.
	conn *connState
	// regTrust says whose registration entries the services page shows.
	regTrust *registration.Trust
	fleet    *fleet
	opts     Options
	pages    map[string]*template.Template
	mux      *http.ServeMux
	hub      *hub
	// metrics count the requests, and are served at /metrics.
	metrics *metrics
	// handler is mux, behind the token check when there is one.
	handler http.Handler
}

// New prepares a dashboard reading over nc; Run must be running for it to
// show anything.
func New(nc *nats.Conn, opts Options) (*Server, error) {
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.LiveInterval <= 0 {
		opts.LiveInterval = time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts.loginDefaults()
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("ui: %w", err)
	}
	s := &Server{nc: nc, js: js, conn: newConnState(opts.Log, opts.Now), fleet: newFleet(opts.Log, opts.MaxRuns), opts: opts, mux: http.NewServeMux(),
		regTrust: &registration.Trust{JS: js, Stream: registration.DefaultStream, Registry: true}}
	s.hub = newHub(s.stamp, opts.LiveInterval)
	if s.pages, err = parsePages(); err != nil {
		return nil, err
	}
	static, err := fs.Sub(staticFS, "static")
	if err != nil {
		return nil, err
	}
	s.mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	// Browsers ask for /favicon.ico by themselves: the same icon.
	s.mux.HandleFunc("GET /favicon.ico", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/svg+xml")
		http.ServeFileFS(w, r, static, "favicon.svg")
	})
	s.mux.HandleFunc("GET /{$}", s.fleetPage)
	s.mux.HandleFunc("GET /runs", s.runsPage)
	s.mux.HandleFunc("GET /runs/{id}", s.runPage)
	s.mux.HandleFunc("GET /hosts/{id}", s.hostPage)
	s.mux.HandleFunc("GET /drift", s.driftPage)
	s.mux.HandleFunc("GET /assignments", s.assignmentsPage)
	s.mux.HandleFunc("GET /assignments/{name}", s.assignmentPage)
	s.mux.HandleFunc("GET /services", s.servicesPage)
	s.mux.HandleFunc("GET /events", s.hub.serve)
	s.mux.HandleFunc("/", s.notFound)
	s.routeAPI()
	s.metrics = newMetrics(s)
	s.mux.Handle("GET /metrics", s.metrics.handler())
	s.handler = s.mux
	if opts.AuthToken != "" {
		s.handler = newAuth(opts, s.mux)
	}
	return s, nil
}

// Validate checks the token and the login settings (a zero value stands
// for its default).
func (o Options) Validate() error {
	if o.AuthToken != "" && len(o.AuthToken) < MinTokenLength {
		return fmt.Errorf("ui: the auth token has %d characters; use at least %d", len(o.AuthToken), MinTokenLength)
	}
	if o.SessionIdle < 0 || o.SessionLifetime < 0 || o.MaxSessions < 0 || o.MaxLoginClients < 0 {
		return fmt.Errorf("ui: session idle time %s, lifetime %s, at most %d sessions and %d login clients: none may be negative",
			o.SessionIdle, o.SessionLifetime, o.MaxSessions, o.MaxLoginClients)
	}
	o.loginDefaults()
	switch {
	case o.SessionIdle > o.SessionLifetime:
		return fmt.Errorf("ui: the session idle time %s is longer than the session lifetime %s", o.SessionIdle, o.SessionLifetime)
	case o.SessionIdle < time.Second:
		return fmt.Errorf("ui: the session idle time %s is shorter than a second", o.SessionIdle)
	}
	return nil
}

// loginDefaults fills in the login settings left zero.
func (o *Options) loginDefaults() {
	o.SessionIdle = cmp.Or(o.SessionIdle, DefaultSessionIdle)
	o.SessionLifetime = cmp.Or(o.SessionLifetime, DefaultSessionLifetime)
	o.MaxSessions = cmp.Or(o.MaxSessions, DefaultMaxSessions)
	o.MaxLoginClients = cmp.Or(o.MaxLoginClients, DefaultMaxLoginClients)
}

// Run follows the registry, the history stream, the assignments and the
// state of the NATS connection, and feeds the live updates until ctx ends; it returns when all of that has stopped.
func (s *Server) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() { s.fleet.followRegistry(ctx, s.js) })
	wg.Go(func() { s.fleet.followHistory(ctx, s.js) })
	wg.Go(func() { s.fleet.followAssignments(ctx, s.js) })
	wg.Go(func() { s.hub.run(ctx, s.fleet.changed) })
	wg.Go(func() { s.conn.follow(ctx, s.nc, s.fleet.notify) })
	wg.Wait()
}

// stamp changes whenever what a page shows may have: the fleet, or the
// state of the connection.
func (s *Server) stamp() uint64 {
	return s.fleet.stamp() + s.conn.stamp()
}

// ServeHTTP serves the pages, with headers that keep the browser from
// running anything the pages did not ship.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	code, took := s.metrics.observe(w, r, s.handler)
	s.opts.Log.Info("ui: request", "method", r.Method, "path", logPath(r.URL.Path), "status", code, "duration", took)
}

// maxLogPath bounds the path an access log line holds.
const maxLogPath = 256

// logPath is a request's path as the access log holds it: never its
// query (a login's next, a filter), at most maxLogPath bytes, "-" for
// none.
func logPath(p string) string {
	if len(p) > maxLogPath {
		p = strings.ToValidUTF8(p[:maxLogPath], "") + "…"
	}
	return cmp.Or(p, "-")
}

// pageFiles are the templates of each page beside the layout: its own
// last, after the pages whose tables it shares (their "content" is
// replaced by its own).
var pageFiles = map[string][]string{
	"fleet": {"fleet"}, "runs": {"runs"}, "run": {"run"}, "host": {"host"}, "drift": {"drift"},
	"assignments": {"assignments"}, "assignment": {"runs", "assignments", "assignment"},
	"services": {"services"}, "error": {"error"},
}

// parsePages parses each page with the layout.
func parsePages() (map[string]*template.Template, error) {
	out := map[string]*template.Template{}
	for name, files := range pageFiles {
		paths := []string{"templates/layout.html"}
		for _, f := range files {
			paths = append(paths, "templates/"+f+".html")
		}
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, paths...)
		if err != nil {
			return nil, fmt.Errorf("ui: page %s: %w", name, err)
		}
		out[name] = t
	}
	return out, nil
}

// Counts says how many hosts and runs the dashboard holds so far.
func (s *Server) Counts() (hosts, runs int) {
	return len(s.fleet.nodeList()), s.fleet.index.Len()
}
