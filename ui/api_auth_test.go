package ui_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/broker/brokertest"
	"github.com/ccm-fleet/ccm/ui"
)

var _ = Describe("the dashboard's JSON API and metrics behind a token", func() {
	const token = "api-canary-0123456789abcdef"
	var srv *ui.Server

	BeforeEach(func() {
		b := brokertest.Start(GinkgoT())
		nc, err := nats.Connect(b.ClientURL())
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(nc.Close)
		clk := &clock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
		srv, err = ui.New(nc, ui.Options{AuthToken: token, Now: clk.Now})
		Expect(err).NotTo(HaveOccurred())
	})

	do := func(r *http.Request) (*http.Response, string) {
		GinkgoHelper()
		r.RemoteAddr = "192.0.2.40:5000"
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, r)
		resp := w.Result()
		body, err := io.ReadAll(resp.Body)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(body)).NotTo(ContainSubstring(token), "no document holds the token")
		return resp, string(body)
	}
	get := func(path string, header ...string) (*http.Response, string) {
		GinkgoHelper()
		r := httptest.NewRequest(http.MethodGet, path, nil)
		for i := 0; i+1 < len(header); i += 2 {
			r.Header.Set(header[i], header[i+1])
		}
		return do(r)
	}
	paths := []string{"/api/v1/fleet", "/api/v1/runs", "/api/v1/drift", "/api/v1/assignments", "/api/v1/hosts/web1",
		"/api/v1/runs/r1", "/api/v1/assignments/web", "/api/v1/services", "/metrics"}

	It("answers nothing without the token or a session, and no redirect to the login form", func() {
		for _, p := range paths {
			resp, body := get(p, "Accept", "application/json")
			Expect(resp.StatusCode).To(Equal(http.StatusUnauthorized), p)
			Expect(body).NotTo(ContainSubstring("ccm_ui_"), p)
			Expect(body).NotTo(ContainSubstring("last_outcomes"), p)
		}
	})

	It("answers with the bearer token, and refuses a wrong one, throttled like the pages", func() {
		for _, p := range []string{"/api/v1/fleet", "/api/v1/runs", "/api/v1/drift", "/api/v1/services", "/metrics"} {
			resp, _ := get(p, "Authorization", "Bearer "+token)
			Expect(resp.StatusCode).To(Equal(http.StatusOK), p)
		}
		for range 6 {
			resp, _ := get("/api/v1/fleet", "Authorization", "Bearer wrong-token-wrong-token")
			Expect(resp.StatusCode).To(Equal(http.StatusUnauthorized))
		}
		resp, _ := get("/api/v1/fleet", "Authorization", "Bearer "+token)
		Expect(resp.StatusCode).To(Equal(http.StatusTooManyRequests), "the right token waits too")
	})

	It("answers with a login session, and no longer once it logged out", func() {
		r := httptest.NewRequest(http.MethodPost, "/login", strings.NewReader(url.Values{"token": {token}, "next": {"/"}}.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		resp, _ := do(r)
		Expect(resp.StatusCode).To(Equal(http.StatusSeeOther))
		var session *http.Cookie
		for _, c := range resp.Cookies() {
			if c.Name == "ccm_ui_session" {
				session = c
			}
		}
		Expect(session).NotTo(BeNil())
		withSession := func(path string) *http.Response {
			GinkgoHelper()
			r := httptest.NewRequest(http.MethodGet, path, nil)
			r.AddCookie(session)
			resp, _ := do(r)
			return resp
		}
		Expect(withSession("/api/v1/fleet").StatusCode).To(Equal(http.StatusOK))
		Expect(withSession("/api/v1/fleet").Header.Get("Content-Type")).To(Equal("application/json"))
		Expect(withSession("/metrics").StatusCode).To(Equal(http.StatusOK))

		out := httptest.NewRequest(http.MethodPost, "/logout", nil)
		out.AddCookie(session)
		resp, _ = do(out)
		Expect(resp.StatusCode).To(Equal(http.StatusSeeOther))
		Expect(withSession("/api/v1/fleet").StatusCode).To(Equal(http.StatusUnauthorized), "a copy of the cookie is worth nothing after a logout")
	})
})
