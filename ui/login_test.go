package ui_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/broker/brokertest"
	"github.com/ccm-fleet/ccm/ui"
)

// clock is a settable clock for the dashboard's Options.Now.
type clock struct {
	mu sync.Mutex
	// guards now
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

var _ = Describe("the dashboard's login", func() {
	const token = "login-canary-0123456789abcdef"
	var (
		nc  *nats.Conn
		clk *clock
		srv *ui.Server
	)
	start := func(opts ui.Options) {
		GinkgoHelper()
		opts.AuthToken = token
		opts.Now = clk.Now
		var err error
		srv, err = ui.New(nc, opts)
		Expect(err).NotTo(HaveOccurred())
	}
	BeforeEach(func() {
		b := brokertest.Start(GinkgoT())
		var err error
		nc, err = nats.Connect(b.ClientURL())
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(nc.Close)
		clk = &clock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
		start(ui.Options{})
	})

	// do sends one request straight to the handler, from the client at
	// remote ("ip:port").
	do := func(remote string, r *http.Request) *http.Response {
		GinkgoHelper()
		r.RemoteAddr = remote
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, r)
		resp := w.Result()
		body, err := io.ReadAll(resp.Body)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(body)).NotTo(ContainSubstring(token), "no page holds the token")
		for _, c := range resp.Header.Values("Set-Cookie") {
			Expect(c).NotTo(ContainSubstring(token), "no cookie holds the token")
		}
		return resp
	}
	login := func(remote, tok string, header ...string) *http.Response {
		GinkgoHelper()
		r := httptest.NewRequest(http.MethodPost, "/login", strings.NewReader(url.Values{"token": {tok}, "next": {"/runs"}}.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for i := 0; i+1 < len(header); i += 2 {
			r.Header.Set(header[i], header[i+1])
		}
		return do(remote, r)
	}
	// session is the session cookie a login answer set.
	session := func(resp *http.Response) *http.Cookie {
		GinkgoHelper()
		for _, c := range resp.Cookies() {
			if c.Name == "ccm_ui_session" {
				return c
			}
		}
		Fail("no session cookie in " + strings.Join(resp.Header.Values("Set-Cookie"), "; "))
		return nil
	}
	get := func(remote, path string, c *http.Cookie, header ...string) *http.Response {
		GinkgoHelper()
		r := httptest.NewRequest(http.MethodGet, path, nil)
		if c != nil {
			r.AddCookie(c)
		}
		for i := 0; i+1 < len(header); i += 2 {
			r.Header.Set(header[i], header[i+1])
		}
		return do(remote, r)
	}
	retryAfter := func(resp *http.Response) time.Duration {
		GinkgoHelper()
		n, err := strconv.Atoi(resp.Header.Get("Retry-After"))
		Expect(err).NotTo(HaveOccurred(), "Retry-After %q", resp.Header.Get("Retry-After"))
		Expect(n).To(BeNumerically(">", 0))
		return time.Duration(n) * time.Second
	}

	Describe("throttling", func() {
		It("refuses a client after wrong tokens, the right one too, until its delay has passed", func() {
			const me = "192.0.2.7:40000"
			var throttled int
			for i := range 30 {
				resp := login(me, "wrong-token-wrong-token-"+strconv.Itoa(i))
				switch resp.StatusCode {
				case http.StatusUnauthorized:
					Expect(throttled).To(BeZero(), "once throttled, a client stays so while the clock stands still")
				case http.StatusTooManyRequests:
					retryAfter(resp)
					throttled++
				default:
					Fail("wrong token answered " + resp.Status)
				}
			}
			Expect(throttled).To(BeNumerically(">=", 20), "a few tries, then refusals")

			resp := login(me, token)
			Expect(resp.StatusCode).To(Equal(http.StatusTooManyRequests), "the right token is refused while throttled")
			wait := retryAfter(resp)
			Expect(resp.Cookies()).To(BeEmpty())

			clk.Advance(wait - time.Second)
			Expect(login(me, token).StatusCode).To(Equal(http.StatusTooManyRequests), "still throttled just before the delay ends")
			clk.Advance(time.Second)
			resp = login(me, token)
			Expect(resp.StatusCode).To(Equal(http.StatusSeeOther), "accepted once the delay has passed")
			Expect(get(me, "/runs", session(resp)).StatusCode).To(Equal(http.StatusOK))
		})
	})

	Describe("throttling", func() {
		bearer := func(remote, tok string) *http.Response {
			GinkgoHelper()
			r := httptest.NewRequest(http.MethodGet, "/runs", nil)
			r.Header.Set("Authorization", "Bearer "+tok)
			return do(remote, r)
		}
		fail := func(remote string, n int) {
			GinkgoHelper()
			for range n {
				Expect(login(remote, "wrong-token-wrong-token").StatusCode).To(Equal(http.StatusUnauthorized))
			}
		}

		It("counts wrong bearer tokens too, and refuses the right one while the client waits", func() {
			const me = "192.0.2.9:5000"
			for range 6 {
				Expect(bearer(me, "wrong-token-wrong-token").StatusCode).To(Equal(http.StatusUnauthorized))
			}
			resp := bearer(me, token)
			Expect(resp.StatusCode).To(Equal(http.StatusTooManyRequests))
			Expect(resp.Header.Get("Retry-After")).To(Equal("1"))
			Expect(login(me, token).StatusCode).To(Equal(http.StatusTooManyRequests), "one count per client, for both forms")
			clk.Advance(time.Second)
			Expect(bearer(me, token).StatusCode).To(Equal(http.StatusOK))
		})

		It("makes each further wrong token double the wait, up to a ceiling", func() {
			const me = "192.0.2.10:5000"
			fail(me, 5)
			var waits []time.Duration
			for range 14 {
				fail(me, 1)
				resp := login(me, token)
				Expect(resp.StatusCode).To(Equal(http.StatusTooManyRequests))
				w := retryAfter(resp)
				waits = append(waits, w)
				clk.Advance(w)
			}
			Expect(waits[:5]).To(Equal([]time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second}))
			Expect(waits[len(waits)-1]).To(Equal(15 * time.Minute))
		})

		It("throttles one client, not the others, and one IPv6 /64 as one client", func() {
			fail("192.0.2.11:5000", 6)
			Expect(login("192.0.2.11:6000", token).StatusCode).To(Equal(http.StatusTooManyRequests), "another port is the same client")
			Expect(login("192.0.2.12:5000", token).StatusCode).To(Equal(http.StatusSeeOther))

			fail("[2001:db8:1:2::1]:5000", 6)
			Expect(login("[2001:db8:1:2:ffff::9]:5000", token).StatusCode).To(Equal(http.StatusTooManyRequests))
			Expect(login("[2001:db8:1:3::1]:5000", token).StatusCode).To(Equal(http.StatusSeeOther))
		})

		It("does not believe X-Forwarded-For", func() {
			const me = "192.0.2.13:5000"
			for i := range 6 {
				Expect(login(me, "wrong-token-wrong-token", "X-Forwarded-For", "198.51.100."+strconv.Itoa(i)).StatusCode).To(Equal(http.StatusUnauthorized))
			}
			Expect(login(me, token, "X-Forwarded-For", "198.51.100.200").StatusCode).To(Equal(http.StatusTooManyRequests))
		})

		// Issue 39, finding 10: behind a reverse proxy every client came
		// from the proxy's address, so one client's wrong tokens locked
		// every other client out. With the proxy trusted, its
		// X-Forwarded-For names the client; nobody else's header is read.
		It("throttles by X-Forwarded-For only for a trusted proxy, reading the header from the right", func() {
			start(ui.Options{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("192.0.2.128/25"), netip.MustParsePrefix("2001:db8:ff::/48")}})
			const proxy = "192.0.2.130:443"
			for range 6 {
				Expect(login(proxy, "wrong-token-wrong-token", "X-Forwarded-For", "198.51.100.7").StatusCode).To(Equal(http.StatusUnauthorized))
			}
			Expect(login(proxy, token, "X-Forwarded-For", "198.51.100.7").StatusCode).To(Equal(http.StatusTooManyRequests), "the client that failed waits")
			Expect(login(proxy, token, "X-Forwarded-For", "198.51.100.8").StatusCode).To(Equal(http.StatusSeeOther), "another client behind the same proxy does not")
			Expect(login(proxy, token, "X-Forwarded-For", "198.51.100.7, 192.0.2.200").StatusCode).To(Equal(http.StatusTooManyRequests),
				"a second trusted proxy on the path is skipped")
			Expect(login(proxy, token, "X-Forwarded-For", "198.51.100.8, 198.51.100.7").StatusCode).To(Equal(http.StatusTooManyRequests),
				"what the client wrote to the left of the nearest hop is not believed")
			Expect(login("[2001:db8:ff::1]:443", token, "X-Forwarded-For", "198.51.100.7").StatusCode).To(Equal(http.StatusTooManyRequests),
				"an IPv6 proxy in the list is trusted too")

			const untrusted = "192.0.2.5:5000" // outside the trusted range
			for i := range 6 {
				Expect(login(untrusted, "wrong-token-wrong-token", "X-Forwarded-For", "198.51.100."+strconv.Itoa(50+i)).StatusCode).To(Equal(http.StatusUnauthorized))
			}
			Expect(login(untrusted, token, "X-Forwarded-For", "198.51.100.99").StatusCode).To(Equal(http.StatusTooManyRequests),
				"an untrusted sender's header is not read: it is throttled by its own address")
			Expect(login(proxy, token, "X-Forwarded-For", "not-an-address").StatusCode).To(Equal(http.StatusSeeOther),
				"an unreadable header leaves the proxy's own address, which has no failures")
		})

		It("clears a client's record when it logs in, and forgets it an hour after its last wrong token", func() {
			const me = "192.0.2.14:5000"
			fail(me, 5)
			Expect(login(me, token).StatusCode).To(Equal(http.StatusSeeOther))
			fail(me, 5) // five free ones again
			clk.Advance(time.Hour)
			fail(me, 5) // and again: the failures above are forgotten
			fail(me, 1)
			Expect(login(me, token).StatusCode).To(Equal(http.StatusTooManyRequests))
		})

		It("remembers at most MaxLoginClients clients, forgetting the one that failed longest ago", func() {
			start(ui.Options{MaxLoginClients: 2})
			fail("192.0.2.20:1", 6)
			fail("192.0.2.21:1", 6)
			Expect(login("192.0.2.20:1", token).StatusCode).To(Equal(http.StatusTooManyRequests))
			fail("192.0.2.22:1", 1)
			Expect(login("192.0.2.21:1", token).StatusCode).To(Equal(http.StatusTooManyRequests), "the newer record is kept")
			Expect(login("192.0.2.20:1", token).StatusCode).To(Equal(http.StatusSeeOther), "the oldest record made room")
		})

		It("ignores a token in the URL", func() {
			r := httptest.NewRequest(http.MethodPost, "/login?token="+url.QueryEscape(token), strings.NewReader(""))
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			Expect(do("192.0.2.15:1", r).StatusCode).To(Equal(http.StatusUnauthorized))
			Expect(get("192.0.2.15:1", "/runs?token="+url.QueryEscape(token), nil).StatusCode).To(Equal(http.StatusUnauthorized))
		})
	})

	Describe("the session cookie", func() {
		It("holds a random session id, not the token, with its attributes", func() {
			resp := login("192.0.2.8:1234", token)
			Expect(resp.StatusCode).To(Equal(http.StatusSeeOther))
			c := session(resp)
			Expect(c.Value).NotTo(ContainSubstring(token))
			Expect(c.Value).To(MatchRegexp(`^[A-Za-z0-9_-]{43}$`), "32 random bytes")
			Expect(c.HttpOnly).To(BeTrue())
			Expect(c.SameSite).To(Equal(http.SameSiteStrictMode))
			Expect(c.Path).To(Equal("/"))
			Expect(c.Secure).To(BeFalse(), "plain HTTP")
			Expect(c.MaxAge).To(Equal(int((12 * time.Hour).Seconds())), "the browser forgets it at the end of its lifetime too")
			Expect(session(login("192.0.2.8:1234", token)).Value).NotTo(Equal(c.Value), "each login its own id")
		})

		It("is Secure over TLS", func() {
			r := httptest.NewRequest(http.MethodPost, "https://ccm.example/login", strings.NewReader(url.Values{"token": {token}}.Encode()))
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			Expect(r.TLS).NotTo(BeNil())
			Expect(session(do("192.0.2.8:1", r)).Secure).To(BeTrue())
		})

		It("does not accept the raw token as a cookie, and clears that cookie of earlier versions", func() {
			old := &http.Cookie{Name: "ccm_ui_token", Value: token}
			Expect(get("192.0.2.16:1", "/runs", old).StatusCode).To(Equal(http.StatusUnauthorized))
			resp := get("192.0.2.16:1", "/login", old)
			Expect(resp.StatusCode).To(Equal(http.StatusOK))
			Expect(resp.Header.Values("Set-Cookie")).To(ContainElement(HavePrefix("ccm_ui_token=; Path=/; Max-Age=0")))
		})
	})

	Describe("expiry", func() {
		BeforeEach(func() { start(ui.Options{SessionIdle: 10 * time.Minute, SessionLifetime: time.Hour}) })

		It("ends a session left idle", func() {
			c := session(login("192.0.2.30:1", token))
			clk.Advance(10*time.Minute - time.Second)
			Expect(get("192.0.2.30:1", "/runs", c).StatusCode).To(Equal(http.StatusOK), "each use restarts the idle time")
			clk.Advance(10*time.Minute - time.Second)
			Expect(get("192.0.2.30:1", "/runs", c).StatusCode).To(Equal(http.StatusOK))
			clk.Advance(10 * time.Minute)
			Expect(get("192.0.2.30:1", "/runs", c).StatusCode).To(Equal(http.StatusUnauthorized))
			resp := get("192.0.2.30:1", "/runs", c, "Accept", "text/html")
			Expect(resp.StatusCode).To(Equal(http.StatusSeeOther))
			Expect(resp.Header.Get("Location")).To(HavePrefix("/login"))
		})

		It("ends a session at the end of its lifetime, however busy", func() {
			c := session(login("192.0.2.31:1", token))
			Expect(c.MaxAge).To(Equal(3600))
			for range 11 {
				clk.Advance(5 * time.Minute)
				Expect(get("192.0.2.31:1", "/runs", c).StatusCode).To(Equal(http.StatusOK))
			}
			clk.Advance(5 * time.Minute)
			Expect(get("192.0.2.31:1", "/runs", c).StatusCode).To(Equal(http.StatusUnauthorized))
		})

		It("is not kept alive by a page's live updates", func() {
			c := session(login("192.0.2.32:1", token))
			clk.Advance(9 * time.Minute)
			Expect(get("192.0.2.32:1", "/runs", c, "X-CCM-Live", "1").StatusCode).To(Equal(http.StatusOK))
			clk.Advance(2 * time.Minute)
			Expect(get("192.0.2.32:1", "/runs", c).StatusCode).To(Equal(http.StatusUnauthorized))
		})

		It("ends a page's event stream when its session would end", func() {
			c := session(login("192.0.2.33:1", token))
			clk.Advance(10*time.Minute - time.Second)
			web := httptest.NewServer(srv)
			DeferCleanup(web.Close)
			req, err := http.NewRequest(http.MethodGet, web.URL+"/events", nil)
			Expect(err).NotTo(HaveOccurred())
			req.AddCookie(c)
			resp, err := http.DefaultClient.Do(req)
			Expect(err).NotTo(HaveOccurred())
			defer resp.Body.Close()
			Expect(resp.StatusCode).To(Equal(http.StatusOK))
			body := make(chan string, 1)
			go func() { b, _ := io.ReadAll(resp.Body); body <- string(b) }()
			Eventually(body).WithTimeout(10*time.Second).Should(Receive(ContainSubstring("event: hello")), "the stream ended")
			Expect(get("192.0.2.33:1", "/runs", c).StatusCode).To(Equal(http.StatusOK), "the stream did not use up the session")
		})

		It("refuses an idle time longer than the lifetime", func() {
			_, err := ui.New(nc, ui.Options{AuthToken: token, SessionIdle: 2 * time.Hour, SessionLifetime: time.Hour})
			Expect(err).To(MatchError(ContainSubstring("the session idle time 2h0m0s is longer than the session lifetime 1h0m0s")))
		})
	})

	Describe("logout", func() {
		logout := func(c *http.Cookie, header ...string) *http.Response {
			GinkgoHelper()
			r := httptest.NewRequest(http.MethodPost, "/logout", nil)
			if c != nil {
				r.AddCookie(c)
			}
			for i := 0; i+1 < len(header); i += 2 {
				r.Header.Set(header[i], header[i+1])
			}
			return do("192.0.2.40:1", r)
		}

		It("ends the session on the server and in the browser, and shows the login page", func() {
			c := session(login("192.0.2.40:1", token))
			other := session(login("192.0.2.40:1", token))
			resp := logout(c)
			Expect(resp.StatusCode).To(Equal(http.StatusSeeOther))
			Expect(resp.Header.Get("Location")).To(Equal("/login?out"))
			cleared := session(resp)
			Expect(cleared.Value).To(BeEmpty())
			Expect(cleared.MaxAge).To(BeNumerically("<", 0))
			Expect(get("192.0.2.40:1", "/runs", c).StatusCode).To(Equal(http.StatusUnauthorized), "a copy of the cookie is worth nothing")
			Expect(get("192.0.2.40:1", "/runs", other).StatusCode).To(Equal(http.StatusOK), "other sessions go on")
		})

		It("only by POST, and not from another site", func() {
			c := session(login("192.0.2.40:1", token))
			Expect(get("192.0.2.40:1", "/logout", c).StatusCode).To(Equal(http.StatusMethodNotAllowed))
			Expect(logout(c, "Origin", "https://evil.example", "Host", "example.com").StatusCode).To(Equal(http.StatusForbidden))
			Expect(logout(c, "Sec-Fetch-Site", "cross-site").StatusCode).To(Equal(http.StatusForbidden))
			Expect(get("192.0.2.40:1", "/runs", c).StatusCode).To(Equal(http.StatusOK), "the forged logouts did nothing")
			Expect(logout(c, "Sec-Fetch-Site", "same-origin").StatusCode).To(Equal(http.StatusSeeOther))
		})

		It("refuses a login form posted from another site", func() {
			Expect(login("192.0.2.41:1", token, "Sec-Fetch-Site", "cross-site").StatusCode).To(Equal(http.StatusForbidden))
			Expect(login("192.0.2.41:1", token, "Origin", "https://evil.example").StatusCode).To(Equal(http.StatusForbidden))
			Expect(login("192.0.2.41:1", token, "Origin", "http://example.com").StatusCode).To(Equal(http.StatusSeeOther), "httptest's own host")
		})
	})

	Describe("the session table", func() {
		It("holds at most MaxSessions, ending the least recently used", func() {
			start(ui.Options{MaxSessions: 3})
			var cs []*http.Cookie
			for range 3 {
				cs = append(cs, session(login("192.0.2.50:1", token)))
				clk.Advance(time.Second)
			}
			Expect(get("192.0.2.50:1", "/runs", cs[0]).StatusCode).To(Equal(http.StatusOK)) // now cs[1] is the least recently used
			cs = append(cs, session(login("192.0.2.50:1", token)))
			Expect(get("192.0.2.50:1", "/runs", cs[1]).StatusCode).To(Equal(http.StatusUnauthorized))
			for _, i := range []int{0, 2, 3} {
				Expect(get("192.0.2.50:1", "/runs", cs[i]).StatusCode).To(Equal(http.StatusOK), "session %d", i)
			}
		})
	})
})
