package ui

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"
)

// Authentication by token: a script sends it as "Authorization: Bearer
// TOKEN" with each request; a person types it in once at /login, which
// starts a session whose random id, not the token, the browser keeps in a
// cookie. Wrong tokens, in either form, are throttled per client.
const (
	sessionCookie = "ccm_ui_session"
	// legacyTokenCookie is the cookie earlier versions kept the token in:
	// never read, and cleared where a browser still sends it.
	legacyTokenCookie = "ccm_ui_token"
	// MinTokenLength is the shortest token accepted.
	MinTokenLength = 16
	// maxLoginForm bounds a login or logout request's body.
	maxLoginForm = 4 << 10
	// liveHeader marks the requests a page's script makes for a live
	// update (see static/live.js).
	liveHeader = "X-CCM-Live"
)

// auth is the token check in front of the dashboard's pages.
type auth struct {
	want     [sha256.Size]byte
	secure   bool
	lifetime time.Duration
	log      *slog.Logger
	sessions *sessions
	throttle *throttle
	// proxies are the addresses whose X-Forwarded-For names the client.
	proxies []netip.Prefix
	// origin refuses login and logout forms posted from another site.
	origin *http.CrossOriginProtection
	next   http.Handler
}

func newAuth(opts Options, next http.Handler) *auth {
	return &auth{
		want:     sha256.Sum256([]byte(opts.AuthToken)),
		secure:   opts.SecureCookie,
		lifetime: opts.SessionLifetime,
		log:      opts.Log,
		sessions: newSessions(opts.Now, opts.SessionIdle, opts.SessionLifetime, opts.MaxSessions),
		throttle: newThrottle(opts.Now, opts.MaxLoginClients),
		proxies:  opts.TrustedProxies,
		origin:   http.NewCrossOriginProtection(),
		next:     next,
	}
}

// valid compares a given token with the token in constant time (of the
// token's length too: both sides are hashed first).
func (a *auth) valid(got string) bool {
	sum := sha256.Sum256([]byte(got))
	return subtle.ConstantTimeCompare(sum[:], a.want[:]) == 1
}

func (a *auth) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/login":
		a.login(w, r)
	case r.URL.Path == "/logout":
		a.logout(w, r)
	case strings.HasPrefix(r.URL.Path, "/static/"), r.URL.Path == "/favicon.ico":
		a.next.ServeHTTP(w, r) // the style sheet, script and icon, for the login page too
	default:
		a.guard(w, r)
	}
}

// guard lets a request with the token or a live session through; others
// get the login page (a browser) or 401.
func (a *auth) guard(w http.ResponseWriter, r *http.Request) {
	if bearer, found := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); found {
		ok, wait := a.attempt(r, bearer)
		switch {
		case wait > 0:
			tooMany(w, wait)
			http.Error(w, fmt.Sprintf("too many wrong tokens from this address: try again in %d s", seconds(wait)), http.StatusTooManyRequests)
		case ok:
			a.next.ServeHTTP(w, r)
		default:
			w.Header().Set("WWW-Authenticate", `Bearer realm="ccm-orch ui", error="invalid_token"`)
			http.Error(w, "that is not the token", http.StatusUnauthorized)
		}
		return
	}
	if c, err := r.Cookie(sessionCookie); err == nil {
		// A page's live updates (its event stream, and the fetches the
		// stream triggers) do not keep a session alive: the stream ends
		// when the session would, and the page then finds it gone.
		live := r.URL.Path == "/events" || r.Header.Get(liveHeader) != ""
		if ok, left := a.sessions.use(c.Value, !live); ok {
			if r.URL.Path == "/events" {
				ctx, cancel := context.WithTimeout(r.Context(), left)
				defer cancel()
				r = r.WithContext(ctx)
			}
			a.next.ServeHTTP(w, r)
			return
		}
	}
	if r.Method == http.MethodGet && strings.Contains(r.Header.Get("Accept"), "text/html") {
		http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
		return
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="ccm-orch ui"`)
	http.Error(w, "a token is needed (Authorization: Bearer, or log in at /login)", http.StatusUnauthorized)
}

// attempt judges a token given by r's client, unless that client must
// still wait after wrong tokens: then it returns how long.
func (a *auth) attempt(r *http.Request, token string) (ok bool, wait time.Duration) {
	client := clientOf(r, a.proxies)
	ok, wait, failed := a.throttle.attempt(client, func() bool { return a.valid(token) })
	if !ok && wait == 0 && failed > loginFreeFailures {
		a.log.Warn("ui: wrong token; the client must wait before trying again",
			"client", client, "failures", failed, "wait", loginDelay(failed).String())
	}
	return ok, wait
}

// loginPage asks for the token; it has no script and posts to itself.
var loginPage = template.Must(template.New("login").Parse(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Log in · CCM Fleet</title>
<link rel="stylesheet" href="/static/style.css"><link rel="icon" href="/static/favicon.svg" type="image/svg+xml"></head><body><header><span class="brand">CCM Fleet</span></header>
<main><h1>Log in</h1><form method="post" action="/login" id="login"><input type="hidden" name="next" value="{{.Next}}">
<label for="token">Token</label> <input type="password" name="token" id="token" size="40" autocomplete="off" autofocus> <button type="submit">Log in</button></form>
{{if .Wrong}}<p class="error" id="login-error">That is not the token.</p>{{end}}{{if .Wait}}<p class="error" id="login-error">Too many wrong tokens from your address: try again in {{.Wait}} s.</p>{{end}}
{{if .Out}}<p id="logged-out">You are logged out.</p>{{end}}</main></body></html>`))

// login shows the form, or checks a posted token and starts a session.
func (a *auth) login(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	a.clearLegacy(w, r)
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		a.page(w, r.URL.Query().Get("next"), http.StatusOK, map[string]any{"Out": r.URL.Query().Has("out")})
	case http.MethodPost:
		if !a.form(w, r) {
			return
		}
		next := r.PostForm.Get("next")
		ok, wait := a.attempt(r, r.PostForm.Get("token"))
		switch {
		case wait > 0:
			tooMany(w, wait)
			a.page(w, next, http.StatusTooManyRequests, map[string]any{"Wait": seconds(wait)})
		case !ok:
			a.page(w, next, http.StatusUnauthorized, map[string]any{"Wrong": true})
		default:
			if c, err := r.Cookie(sessionCookie); err == nil {
				a.sessions.end(c.Value) // a login replaces the session it came with
			}
			http.SetCookie(w, a.cookie(r, a.sessions.create(), int(a.lifetime/time.Second)))
			http.Redirect(w, r, localPath(next), http.StatusSeeOther)
		}
	default:
		w.Header().Set("Allow", "GET, HEAD, POST")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

// logout ends the session the request carries, on the server and in the
// browser, and sends the browser to the login page.
func (a *auth) logout(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		http.Error(w, "log out with POST", http.StatusMethodNotAllowed)
		return
	}
	if !a.form(w, r) {
		return
	}
	if c, err := r.Cookie(sessionCookie); err == nil {
		a.sessions.end(c.Value)
	}
	http.SetCookie(w, a.cookie(r, "", -1))
	a.clearLegacy(w, r)
	http.Redirect(w, r, "/login?out", http.StatusSeeOther)
}

// form checks that a login or logout form comes from this site and reads
// its bounded body; it answers the request itself when not.
func (a *auth) form(w http.ResponseWriter, r *http.Request) bool {
	if err := a.origin.Check(r); err != nil {
		http.Error(w, "a login or logout form from another site is refused", http.StatusForbidden)
		return false
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxLoginForm)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "unreadable form: "+err.Error(), http.StatusBadRequest)
		return false
	}
	return true
}

// page renders the login page with status.
func (a *auth) page(w http.ResponseWriter, next string, status int, data map[string]any) {
	data["Next"] = localPath(next)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_ = loginPage.Execute(w, data)
}

// cookie is the session cookie holding id, kept maxAge seconds (-1:
// deleted).
func (a *auth) cookie(r *http.Request, id string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: sessionCookie, Value: id, Path: "/", MaxAge: maxAge,
		HttpOnly: true, Secure: a.secure || r.TLS != nil, SameSite: http.SameSiteStrictMode}
}

// clearLegacy deletes the token cookie of earlier versions from a browser
// that still sends it.
func (a *auth) clearLegacy(w http.ResponseWriter, r *http.Request) {
	if _, err := r.Cookie(legacyTokenCookie); err == nil {
		http.SetCookie(w, &http.Cookie{Name: legacyTokenCookie, Path: "/", MaxAge: -1,
			HttpOnly: true, Secure: a.secure || r.TLS != nil, SameSite: http.SameSiteStrictMode})
	}
}

// localPath is next when it is a path of this site, else "/": no open
// redirect.
func localPath(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.Contains(next, `\`) {
		return "/"
	}
	return next
}

// tooMany sets Retry-After for a throttled client.
func tooMany(w http.ResponseWriter, wait time.Duration) {
	w.Header().Set("Retry-After", fmt.Sprint(seconds(wait)))
}

// seconds is d in whole seconds, rounded up.
func seconds(d time.Duration) int64 {
	return int64((d + time.Second - 1) / time.Second)
}
