package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/broker/brokertest"
)

// lockedBuffer is a buffer a running command writes while the spec reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

var _ = Describe("ccm-orch ui", func() {
	var dir, token string
	BeforeEach(func() {
		dir = GinkgoT().TempDir()
		token = filepath.Join(dir, "token")
		Expect(os.WriteFile(token, []byte("0123456789abcdef-ui\n"), 0o600)).To(Succeed())
	})

	DescribeTable("refuses, before connecting, what would expose the fleet or cannot work",
		func(args func() []string, want string) {
			code, _, errOut := orch(append([]string{"ui", "--server", "nats://127.0.0.1:1"}, args()...)...)
			Expect(code).To(Equal(1))
			Expect(errOut).To(ContainSubstring(want))
		},
		Entry("all interfaces without TLS or a token", func() []string { return []string{"--listen", ":8080"} },
			"--listen :8080 is not a loopback address: the dashboard shows the whole fleet, so it needs --https-cert/--https-key and --auth-token there"),
		Entry("another address with a token but no TLS", func() []string { return []string{"--listen", "10.1.2.3:8080", "--auth-token", token} },
			"is not a loopback address"),
		Entry("a short token", func() []string {
			short := filepath.Join(dir, "short")
			Expect(os.WriteFile(short, []byte("abc\n"), 0o600)).To(Succeed())
			return []string{"--auth-token", short}
		}, "the token must be one line of at least 16 characters"),
		Entry("a certificate without its key", func() []string { return []string{"--https-cert", token} }, "--https-cert and --https-key go together"),
		Entry("a session idle time longer than its lifetime", func() []string {
			return []string{"--auth-token", token, "--session-idle", "2h", "--session-lifetime", "1h"}
		}, "the session idle time 2h0m0s is longer than the session lifetime 1h0m0s"),
		Entry("a session that never lasts", func() []string { return []string{"--auth-token", token, "--session-lifetime", "0s"} },
			"--session-idle 30m0s and --session-lifetime 0s must be longer than 0"),
		Entry("a trusted proxy that is no address", func() []string { return []string{"--trusted-proxy", "proxy.example"} },
			`--trusted-proxy "proxy.example" is neither an IP address nor a CIDR such as 10.0.0.0/24`),
		Entry("a trusted proxy CIDR with host bits", func() []string { return []string{"--trusted-proxy", "10.0.0.7/24"} },
			`--trusted-proxy "10.0.0.7/24" has host bits set; did you mean 10.0.0.0/24?`),
	)

	It("serves HTTPS behind the token on any address, and stops on a signal", func() {
		b := brokertest.Start(GinkgoT())
		pki := brokertest.WritePKI(GinkgoT(), dir)
		ctx, cancel := context.WithCancel(context.Background())
		var out, errOut lockedBuffer
		done := make(chan int, 1)
		go func() {
			done <- runContext(ctx, []string{"ui", "--listen", "127.0.0.1:0", "--server", b.ClientURL(),
				"--auth-token", token, "--https-cert", pki.ServerCert, "--https-key", pki.ServerKey}, &out, &errOut)
		}()
		addr := regexp.MustCompile(`on https://(127\.0\.0\.1:\d+)/`)
		Eventually(func() string { return out.String() }).WithTimeout(10*time.Second).Should(MatchRegexp(addr.String()), errOut.String())
		url := "https://" + addr.FindStringSubmatch(out.String())[1] + "/runs"

		ca, err := os.ReadFile(pki.CA)
		Expect(err).NotTo(HaveOccurred())
		pool := x509.NewCertPool()
		Expect(pool.AppendCertsFromPEM(ca)).To(BeTrue())
		c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
		get := func(auth string) int {
			req, err := http.NewRequest(http.MethodGet, url, nil)
			Expect(err).NotTo(HaveOccurred())
			if auth != "" {
				req.Header.Set("Authorization", "Bearer "+auth)
			}
			resp, err := c.Do(req)
			Expect(err).NotTo(HaveOccurred())
			resp.Body.Close()
			return resp.StatusCode
		}
		Expect(get("")).To(Equal(http.StatusUnauthorized))
		Expect(get("0123456789abcdef-ui")).To(Equal(http.StatusOK))

		cancel()
		Eventually(done).WithTimeout(10 * time.Second).Should(Receive(Equal(0)))
	})
})
