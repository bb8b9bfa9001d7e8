package integration_test

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"

	"github.com/ccm-fleet/ccm/broker/brokertest"
)

var _ = Describe("adversarial, round 3: the dashboard's login", func() {
	It("throttles wrong tokens, keeps the token out of every cookie and page, and ends sessions at logout", func() {
		const canary = "login-canary-7f3c2a91e5d4b6082c"
		dir := GinkgoT().TempDir()
		b := brokertest.Start(GinkgoT())
		provisionHistory(b.ClientURL(), 1)
		pki := brokertest.WritePKI(GinkgoT(), dir)
		tokenFile := filepath.Join(dir, "ui.token")
		Expect(os.WriteFile(tokenFile, []byte(canary+"\n"), 0o600)).To(Succeed())

		s, err := gexec.Start(exec.Command(orchBin, "ui", "--listen", "127.0.0.1:0", "--server", b.ClientURL(),
			"--auth-token", tokenFile, "--https-cert", pki.ServerCert, "--https-key", pki.ServerKey,
			"--session-idle", "10m", "--session-lifetime", "1h"), GinkgoWriter, GinkgoWriter)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { s.Interrupt().Wait(30 * time.Second); s.Kill().Wait(10 * time.Second) })
		addr := regexp.MustCompile(`on (https://127\.0\.0\.1:\d+)/`)
		Eventually(func() []byte { return s.Out.Contents() }).WithTimeout(30 * time.Second).Should(MatchRegexp(addr.String()))
		base := addr.FindStringSubmatch(string(s.Out.Contents()))[1]

		ca, err := os.ReadFile(pki.CA)
		Expect(err).NotTo(HaveOccurred())
		pool := x509.NewCertPool()
		Expect(pool.AppendCertsFromPEM(ca)).To(BeTrue())
		c := &http.Client{
			Transport:     &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
			Timeout:       30 * time.Second,
		}
		// send sends one request and checks that the canary is in none of
		// the answer's cookies and not in its page.
		send := func(method, path string, form url.Values, cookie *http.Cookie, header ...string) *http.Response {
			GinkgoHelper()
			var body io.Reader
			if form != nil {
				body = strings.NewReader(form.Encode())
			}
			req, err := http.NewRequest(method, base+path, body)
			Expect(err).NotTo(HaveOccurred())
			if form != nil {
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			}
			if cookie != nil {
				req.AddCookie(cookie)
			}
			for i := 0; i+1 < len(header); i += 2 {
				req.Header.Set(header[i], header[i+1])
			}
			resp, err := c.Do(req)
			Expect(err).NotTo(HaveOccurred())
			page, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			Expect(err).NotTo(HaveOccurred())
			Expect(string(page)).NotTo(ContainSubstring(canary), "%s %s: the page", method, path)
			for _, sc := range resp.Header.Values("Set-Cookie") {
				Expect(sc).NotTo(ContainSubstring(canary), "%s %s: a cookie", method, path)
			}
			return resp
		}
		login := func(tok string) *http.Response {
			GinkgoHelper()
			return send(http.MethodPost, "/login", url.Values{"token": {tok}, "next": {"/runs"}}, nil)
		}

		By("30 wrong tokens: a few are judged, then the client is refused")
		statuses := map[int]int{}
		for i := range 30 {
			statuses[login("wrong-token-"+strconv.Itoa(i)+"-wrong").StatusCode]++
		}
		Expect(statuses).To(HaveLen(2), "only 401 and 429: %v", statuses)
		Expect(statuses[http.StatusTooManyRequests]).To(BeNumerically(">=", 20), "%v", statuses)

		By("the right token is refused too while the client waits")
		resp := login(canary)
		Expect(resp.StatusCode).To(Equal(http.StatusTooManyRequests))
		wait, err := strconv.Atoi(resp.Header.Get("Retry-After"))
		Expect(err).NotTo(HaveOccurred())
		Expect(wait).To(BeNumerically(">=", 1))
		Expect(resp.Cookies()).To(BeEmpty())

		By("once the wait is over, the right token starts a session")
		var session *http.Cookie
		Eventually(func() int {
			resp := login(canary)
			for _, ck := range resp.Cookies() {
				if ck.Name == "ccm_ui_session" {
					session = ck
				}
			}
			return resp.StatusCode
		}).WithTimeout(60 * time.Second).WithPolling(500 * time.Millisecond).Should(Equal(http.StatusSeeOther))
		Expect(session).NotTo(BeNil())
		Expect(session.Value).To(MatchRegexp(`^[A-Za-z0-9_-]{43}$`))
		Expect(session.HttpOnly).To(BeTrue())
		Expect(session.Secure).To(BeTrue())
		Expect(session.SameSite).To(Equal(http.SameSiteStrictMode))
		Expect(session.MaxAge).To(Equal(3600))

		runs := send(http.MethodGet, "/runs", nil, session)
		Expect(runs.StatusCode).To(Equal(http.StatusOK))

		By("the raw token is no cookie")
		Expect(send(http.MethodGet, "/runs", nil, &http.Cookie{Name: "ccm_ui_token", Value: canary}).StatusCode).To(Equal(http.StatusUnauthorized))

		By("a logout posted from another site is refused; the session's own ends it")
		Expect(send(http.MethodPost, "/logout", url.Values{}, session, "Origin", "https://evil.example").StatusCode).To(Equal(http.StatusForbidden))
		Expect(send(http.MethodGet, "/runs", nil, session).StatusCode).To(Equal(http.StatusOK))
		out := send(http.MethodPost, "/logout", url.Values{}, session)
		Expect(out.StatusCode).To(Equal(http.StatusSeeOther))
		Expect(out.Header.Get("Location")).To(Equal("/login?out"))
		Expect(out.Header.Get("Set-Cookie")).To(HavePrefix("ccm_ui_session=; Path=/; Max-Age=0; HttpOnly; Secure; SameSite=Strict"))
		gone := send(http.MethodGet, "/runs", nil, session, "Accept", "text/html")
		Expect(gone.StatusCode).To(Equal(http.StatusSeeOther))
		Expect(gone.Header.Get("Location")).To(Equal("/login?next=%2Fruns"))

		Expect(string(s.Out.Contents())+string(s.Err.Contents())).NotTo(ContainSubstring(canary), "the logs")
	})
})
