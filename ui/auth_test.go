package ui_test

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"

	"github.com/nats-io/nats.go"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/broker/brokertest"
	"github.com/ccm-fleet/ccm/ui"
)

var _ = Describe("the dashboard's token", func() {
	const token = "0123456789abcdef-token"
	var (
		web *httptest.Server
		nc  *nats.Conn
	)
	BeforeEach(func() {
		b := brokertest.Start(GinkgoT())
		var err error
		nc, err = nats.Connect(b.ClientURL())
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(nc.Close)
		srv, err := ui.New(nc, ui.Options{AuthToken: token})
		Expect(err).NotTo(HaveOccurred())
		web = httptest.NewServer(srv)
		DeferCleanup(web.Close)
	})
	noRedirect := func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	get := func(c *http.Client, path string, header ...string) *http.Response {
		GinkgoHelper()
		req, err := http.NewRequest(http.MethodGet, web.URL+path, nil)
		Expect(err).NotTo(HaveOccurred())
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := c.Do(req)
		Expect(err).NotTo(HaveOccurred())
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}

	It("refuses a token shorter than 16 characters", func() {
		_, err := ui.New(nc, ui.Options{AuthToken: "short"})
		Expect(err).To(MatchError(ContainSubstring("use at least 16")))
	})

	It("answers 401 without it, sends a browser to the login page, and serves the style sheet to all", func() {
		c := &http.Client{CheckRedirect: noRedirect}
		Expect(get(c, "/runs").StatusCode).To(Equal(http.StatusUnauthorized))
		Expect(get(c, "/events").StatusCode).To(Equal(http.StatusUnauthorized))
		Expect(get(c, "/runs", "Authorization", "Bearer wrong-token-wrong-token").StatusCode).To(Equal(http.StatusUnauthorized))
		resp := get(c, "/runs?page=2", "Accept", "text/html")
		Expect(resp.StatusCode).To(Equal(http.StatusSeeOther))
		Expect(resp.Header.Get("Location")).To(Equal("/login?next=%2Fruns%3Fpage%3D2"))
		Expect(get(c, "/static/style.css").StatusCode).To(Equal(http.StatusOK))
		Expect(get(c, "/runs", "Authorization", "Bearer "+token).StatusCode).To(Equal(http.StatusOK))
	})

	It("logs a browser in with a cookie, back to a page of this site only", func() {
		jar, err := cookiejar.New(nil)
		Expect(err).NotTo(HaveOccurred())
		c := &http.Client{Jar: jar, CheckRedirect: noRedirect}
		post := func(tok, next string) *http.Response {
			resp, err := c.PostForm(web.URL+"/login", url.Values{"token": {tok}, "next": {next}})
			Expect(err).NotTo(HaveOccurred())
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusUnauthorized {
				Expect(string(body)).To(ContainSubstring("That is not the token."))
			}
			return resp
		}
		Expect(post("nope-nope-nope-nope", "/runs").StatusCode).To(Equal(http.StatusUnauthorized))
		Expect(get(c, "/runs").StatusCode).To(Equal(http.StatusUnauthorized))

		resp := post(token, "/runs")
		Expect(resp.StatusCode).To(Equal(http.StatusSeeOther))
		Expect(resp.Header.Get("Location")).To(Equal("/runs"))
		cookie := resp.Header.Get("Set-Cookie")
		Expect(cookie).To(And(ContainSubstring("HttpOnly"), ContainSubstring("SameSite=Strict")))
		Expect(get(c, "/runs").StatusCode).To(Equal(http.StatusOK))

		for _, next := range []string{"//evil.example/x", "https://evil.example/", `/\evil.example`} {
			Expect(post(token, next).Header.Get("Location")).To(Equal("/"), next)
		}
	})

	It("escapes what it echoes on the login page", func() {
		resp, err := http.Get(web.URL + "/login?next=" + url.QueryEscape(`/"><script>alert(1)</script>`))
		Expect(err).NotTo(HaveOccurred())
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		Expect(string(body)).NotTo(ContainSubstring("<script>"))
		Expect(strings.Count(string(body), "<form")).To(Equal(1))
	})
})
