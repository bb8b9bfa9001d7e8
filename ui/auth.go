package ui

import (
	"crypto/sha256"
	"crypto/subtle"
	"html/template"
	"net/http"
	"net/url"
	"strings"
)

// Authentication by token: a request carries it as "Authorization: Bearer
// TOKEN", or as the cookie the login page sets after the token was typed
// in once.
const (
	tokenCookie = "ccm_ui_token"
	// MinTokenLength is the shortest token accepted.
	MinTokenLength = 16
)

// authenticated wraps next so that only requests carrying the token reach
// it; others get the login page (a browser) or 401.
func authenticated(token string, secure bool, next http.Handler) http.Handler {
	want := sha256.Sum256([]byte(token))
	ok := func(got string) bool {
		sum := sha256.Sum256([]byte(got))
		return subtle.ConstantTimeCompare(sum[:], want[:]) == 1
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/login":
			login(w, r, ok, secure)
			return
		case strings.HasPrefix(r.URL.Path, "/static/"):
			next.ServeHTTP(w, r) // the style sheet and script, for the login page too
			return
		}
		if bearer, found := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); found && ok(bearer) {
			next.ServeHTTP(w, r)
			return
		}
		if c, err := r.Cookie(tokenCookie); err == nil && ok(c.Value) {
			next.ServeHTTP(w, r)
			return
		}
		if r.Method == http.MethodGet && strings.Contains(r.Header.Get("Accept"), "text/html") {
			http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="ccm-orch ui"`)
		http.Error(w, "a token is needed (Authorization: Bearer, or log in at /login)", http.StatusUnauthorized)
	})
}

// loginPage asks for the token; it has no script and posts to itself.
var loginPage = template.Must(template.New("login").Parse(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Log in · CCM Fleet</title>
<link rel="stylesheet" href="/static/style.css"></head><body><header><span class="brand">CCM Fleet</span></header>
<main><h1>Log in</h1><form method="post" action="/login"><input type="hidden" name="next" value="{{.Next}}">
<input type="password" name="token" id="token" size="40" aria-label="token" autofocus> <button type="submit">Log in</button></form>
{{if .Wrong}}<p class="error">That is not the token.</p>{{end}}</main></body></html>`))

// login shows the form, or checks a posted token and sets the cookie.
func login(w http.ResponseWriter, r *http.Request, ok func(string) bool, secure bool) {
	next := r.FormValue("next")
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.Contains(next, `\`) {
		next = "/" // only a path of this site: no open redirect
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	switch r.Method {
	case http.MethodGet:
		_ = loginPage.Execute(w, map[string]any{"Next": next})
	case http.MethodPost:
		if !ok(r.PostFormValue("token")) {
			w.WriteHeader(http.StatusUnauthorized)
			_ = loginPage.Execute(w, map[string]any{"Next": next, "Wrong": true})
			return
		}
		http.SetCookie(w, &http.Cookie{Name: tokenCookie, Value: r.PostFormValue("token"), Path: "/",
			HttpOnly: true, Secure: secure, SameSite: http.SameSiteStrictMode})
		http.Redirect(w, r, next, http.StatusSeeOther)
	default:
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}
