package urlscope_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/internal/urlscope"
)

func prefix(raw string) urlscope.Prefix {
	p, err := urlscope.ParsePrefix("net.urls[0]", raw)
	ExpectWithOffset(1, err).ToNot(HaveOccurred())
	return p
}

var _ = Describe("URL prefixes", func() {
	DescribeTable("match scheme, host, port, then the path component by component",
		func(pfx, url string, want bool) {
			Expect(prefix(pfx).Matches(url)).To(Equal(want))
		},
		Entry("a file below", "https://repo.example.com/releases/", "https://repo.example.com/releases/x.tgz", true),
		Entry("the prefix itself", "https://repo.example.com/releases/", "https://repo.example.com/releases", true),
		Entry("no trailing slash in the prefix", "https://repo.example.com/releases", "https://repo.example.com/releases/a/b.zip", true),
		Entry("a sibling sharing its letters", "https://repo.example.com/releases/", "https://repo.example.com/releases-evil/x.tgz", false),
		Entry("a host sharing its letters", "https://repo.example.com/", "https://repo.example.com.evil/x.tgz", false),
		Entry("a host ending like it", "https://example.com/", "https://evil-example.com/x.tgz", false),
		Entry("another scheme", "https://repo.example.com/", "http://repo.example.com/x.tgz", false),
		Entry("another port", "https://repo.example.com/", "https://repo.example.com:8443/x.tgz", false),
		Entry("the default https port written", "https://repo.example.com/", "https://repo.example.com:443/x.tgz", true),
		Entry("the default http port in the prefix", "http://repo.example.com:80/", "http://repo.example.com/x.tgz", true),
		Entry("a port with leading zeros", "http://repo.example.com:8080/", "http://repo.example.com:08080/x.tgz", true),
		Entry("the host in capitals", "https://repo.example.com/r/", "https://REPO.Example.COM/r/x.tgz", true),
		Entry("the host with a trailing dot", "https://repo.example.com/r/", "https://repo.example.com./r/x.tgz", true),
		Entry("the path in capitals is another path", "https://repo.example.com/r/", "https://repo.example.com/R/x.tgz", false),
		Entry("user information does not change where it leads", "https://repo.example.com/r/", "https://u:pw@repo.example.com/r/x.tgz", true),
		Entry("user information naming the prefix's host", "https://repo.example.com/r/", "https://repo.example.com@evil.example/r/x.tgz", false),
		Entry("a redacted password", "https://repo.example.com/r/", "https://[redacted]@repo.example.com/r/x.tgz", true),
		Entry("a .. component", "https://repo.example.com/r/", "https://repo.example.com/r/../admin/x.tgz", false),
		Entry("an escaped .. component", "https://repo.example.com/r/", "https://repo.example.com/r/%2e%2e/admin/x.tgz", false),
		Entry("an escaped slash", "https://repo.example.com/r/", "https://repo.example.com/r%2F..%2Fadmin/x.tgz", false),
		Entry("a backslash", "https://repo.example.com/r/", `https://repo.example.com/r/..%5Cadmin/x.tgz`, false),
		Entry("an escaped letter", "https://repo.example.com/r/", "https://repo.example.com/%72/x.tgz", true),
		Entry("a query is not part of the path", "https://repo.example.com/r/", "https://repo.example.com/r/x.tgz?a=/b", true),
		Entry("the whole host", "https://repo.example.com", "https://repo.example.com/any/x.tgz", true),
		Entry("an IPv6 host", "http://[::1]:8080/r/", "http://[0:0::1]:8080/r/x.tgz", true),
		Entry("an IPv4-mapped IPv6 host", "http://127.0.0.1:8080/r/", "http://[::ffff:127.0.0.1]:8080/r/x.tgz", true),
		Entry("an IPv4 address in another form", "http://127.0.0.1/r/", "http://127.1/r/x.tgz", false),
		Entry("not http", "https://repo.example.com/", "ftp://repo.example.com/x.tgz", false),
	)

	DescribeTable("refuses prefixes that are not plain http(s) prefixes",
		func(raw, problem string) {
			_, err := urlscope.ParsePrefix("net.urls[0]", raw)
			Expect(err).To(MatchError(ContainSubstring(problem)))
		},
		Entry("user information", "https://user@repo.example.com/", "user information"),
		Entry("a password", "https://user:pw@repo.example.com/", "user information"),
		Entry("a query", "https://repo.example.com/?a=b", "query"),
		Entry("a fragment", "https://repo.example.com/#x", "fragment"),
		Entry("another scheme", "file:///srv/www", "only http and https"),
		Entry("no scheme", "repo.example.com/releases", "not an absolute URL"),
		Entry("no host", "https:///releases", "no host"),
		Entry("a .. component", "https://repo.example.com/a/../b", "without . and .."),
		Entry("a bad port", "https://repo.example.com:99999/", "not a port"),
		Entry("an address in another form", "http://2130706433/", "usual form"),
		Entry("a zone", "http://[fe80::1%25eth0]/", "zone"),
	)

	It("tells when a deny prefix covers an allow prefix", func() {
		Expect(prefix("https://repo.example.com/").Covers(prefix("https://repo.example.com/releases/"))).To(BeTrue())
		Expect(prefix("https://repo.example.com/releases/").Covers(prefix("https://repo.example.com/"))).To(BeFalse())
		Expect(prefix("https://repo.example.com/releases").Same(prefix("https://REPO.example.com:443/releases/"))).To(BeTrue())
	})
})

var _ = Describe("Guard", func() {
	allow := func(raws ...string) *urlscope.Guard {
		g := &urlscope.Guard{}
		for i, r := range raws {
			p, err := urlscope.ParsePrefix(fmt.Sprintf("net.urls[%d]", i), r)
			Expect(err).ToNot(HaveOccurred())
			g.Allow = append(g.Allow, p)
		}
		return g
	}

	DescribeTable("without net.urls refuses loopback, link-local, unspecified and metadata hosts",
		func(url string, allowed bool, kind string) {
			v := (&urlscope.Guard{}).Judge(url)
			Expect(v.Allowed).To(Equal(allowed), "%+v", v)
			if !allowed && kind != "" {
				Expect(v.Rule).To(Equal("net.urls (not set)"))
				Expect(v.Reason).To(ContainSubstring(kind))
			}
		},
		Entry("a public name", "https://repo.example.com/x.tgz", true, ""),
		Entry("a private address (not refused by default)", "http://10.1.2.3/x.tgz", true, ""),
		Entry("127.0.0.1", "http://127.0.0.1:8080/x.tgz", false, "loopback"),
		Entry("127.9.9.9", "http://127.9.9.9/x.tgz", false, "loopback"),
		Entry("::1", "http://[::1]/x.tgz", false, "loopback"),
		Entry("an IPv4-mapped loopback", "http://[::ffff:7f00:1]/x.tgz", false, "loopback"),
		Entry("localhost", "http://LOCALHOST./x.tgz", false, "loopback"),
		Entry("a name below localhost", "http://a.localhost/x.tgz", false, "loopback"),
		Entry("link-local", "http://169.254.1.1/x.tgz", false, "link-local"),
		Entry("IPv6 link-local", "http://[fe80::1]/x.tgz", false, "link-local"),
		Entry("the metadata address", "http://169.254.169.254/latest/meta-data/", false, "cloud metadata"),
		Entry("the IPv6 metadata address", "http://[fd00:ec2::254]/latest/", false, "cloud metadata"),
		Entry("the metadata name", "http://metadata.google.internal/computeMetadata/", false, "cloud metadata"),
		Entry("0.0.0.0", "http://0.0.0.0:8080/x.tgz", false, "unspecified"),
		Entry("loopback behind a scheme in capitals", "HTTP://127.0.0.1/x.tgz", false, "loopback"),
		Entry("loopback behind user information that names a public host", "http://repo.example.com@127.0.0.1/x.tgz", false, "loopback"),
		// Not the usual form of an address: refused before any rule.
		Entry("loopback as one decimal number", "http://2130706433/x.tgz", false, ""),
		Entry("loopback in hexadecimal", "http://0x7f.0.0.1/x.tgz", false, ""),
	)

	It("judges an address dialled directly (a goss addr rule) by the host and port of the prefixes", func() {
		none := &urlscope.Guard{}
		Expect(none.JudgeAddress("tcp://10.0.0.1:22")).To(Equal(urlscope.Verdict{Allowed: true, Rule: "net.urls (not restricted)"}))
		v := none.JudgeAddress("tcp://169.254.169.254:80")
		Expect(v.Allowed).To(BeFalse())
		Expect(v.Reason).To(ContainSubstring("cloud metadata"))
		Expect(none.JudgeAddress("udp://localhost:53").Allowed).To(BeFalse())
		Expect(none.JudgeAddress("http://10.0.0.1:22")).To(Equal(urlscope.Verdict{Rule: "net.urls", Reason: "not a tcp:// or udp:// address"}))
		Expect(none.JudgeAddress("tcp://10.0.0.1")).To(Equal(urlscope.Verdict{Rule: "net.urls", Reason: "the address needs a host and a port"}))

		g := allow("http://127.0.0.1:8080/releases/", "https://db.example.com:5432/")
		Expect(g.JudgeAddress("tcp://127.0.0.1:8080")).To(Equal(urlscope.Verdict{Allowed: true, Rule: `net.urls[0] "http://127.0.0.1:8080/releases/"`}))
		Expect(g.JudgeAddress("tcp://db.example.com:5432").Allowed).To(BeTrue())
		Expect(g.JudgeAddress("tcp://db.example.com:22")).To(Equal(urlscope.Verdict{Rule: "net.urls (no prefix at this host and port: default deny)"}))
		p, err := urlscope.ParsePrefix("deny.net.urls[0]", "https://db.example.com:5432/")
		Expect(err).ToNot(HaveOccurred())
		g.Deny = []urlscope.Prefix{p}
		Expect(g.JudgeAddress("tcp://db.example.com:5432")).To(Equal(urlscope.Verdict{Rule: `deny.net.urls[0] "https://db.example.com:5432/"`}))
	})

	It("with net.urls allows only what a prefix holds, loopback only when named", func() {
		g := allow("http://127.0.0.1:8080/releases/", "https://repo.example.com/r/")
		Expect(g.Judge("http://127.0.0.1:8080/releases/a.tgz")).To(Equal(urlscope.Verdict{Allowed: true, Rule: `net.urls[0] "http://127.0.0.1:8080/releases/"`}))
		Expect(g.Judge("http://127.0.0.1:8080/releases-evil/a.tgz").Allowed).To(BeFalse())
		Expect(g.Judge("http://127.0.0.1:8080/releases-evil/a.tgz").Rule).To(Equal("net.urls (no prefix holds it: default deny)"))
		Expect(g.Judge("http://127.0.0.1:8081/releases/a.tgz").Allowed).To(BeFalse())
		Expect(g.Judge("https://repo.example.com/r/a.tgz").Allowed).To(BeTrue())

		ip := netip.MustParseAddr("127.0.0.1")
		Expect(g.JudgeDial("127.0.0.1", "8080", ip)).To(Succeed())
		err := g.JudgeDial("repo.example.com", "443", ip)
		Expect(err).To(MatchError(urlscope.ErrRefused))
		Expect(err.Error()).To(ContainSubstring("dialled at 127.0.0.1, a loopback address"))
		Expect(g.JudgeDial("repo.example.com", "443", netip.MustParseAddr("93.184.215.14"))).To(Succeed())
		Expect(allow("http://localhost:8080/").JudgeDial("localhost", "8080", netip.MustParseAddr("::1"))).To(Succeed())
		Expect((&urlscope.Guard{}).JudgeDial("repo.example.com", "443", netip.MustParseAddr("169.254.169.254"))).To(MatchError(ContainSubstring("cloud metadata")))
	})

	It("fetches a URL the host's configuration names as configured, and nothing special elsewhere", func() {
		g := urlscope.Configured("http://user:pw@127.0.0.1:8080/bundles/web.tar.gz", "source web")
		Expect(g.Judge("http://127.0.0.1:8080/other/x").Allowed).To(BeTrue())
		Expect(g.Judge("http://127.0.0.1:8081/x").Allowed).To(BeFalse())
		Expect(g.Judge("http://169.254.169.254/latest/").Allowed).To(BeFalse())
		Expect(g.Judge("https://cdn.example.com/x").Allowed).To(BeTrue())
		Expect(g.JudgeDial("127.0.0.1", "8080", netip.MustParseAddr("127.0.0.1"))).To(Succeed())
		Expect(g.JudgeDial("cdn.example.com", "443", netip.MustParseAddr("127.0.0.1"))).To(MatchError(urlscope.ErrRefused))
		byName := urlscope.Configured("https://bundles.example.com/web.tar.gz", "source web")
		Expect(byName.JudgeDial("bundles.example.com", "443", netip.MustParseAddr("127.0.0.1"))).To(Succeed())
		Expect(byName.JudgeDial("bundles.example.com", "8443", netip.MustParseAddr("127.0.0.1"))).To(MatchError(urlscope.ErrRefused))
	})

	It("refuses what a deny prefix holds whatever allows it", func() {
		g := allow("https://repo.example.com/")
		d, err := urlscope.ParsePrefix("deny.net.urls[0]", "https://repo.example.com/private/")
		Expect(err).ToNot(HaveOccurred())
		g.Deny = append(g.Deny, d)
		Expect(g.Judge("https://repo.example.com/public/a.tgz").Allowed).To(BeTrue())
		Expect(g.Judge("https://repo.example.com/private/a.tgz")).To(Equal(urlscope.Verdict{Rule: `deny.net.urls[0] "https://repo.example.com/private/"`}))
	})
})

var _ = Describe("Client", func() {
	var (
		srv  *httptest.Server
		mu   sync.Mutex
		seen []string
	)
	BeforeEach(func() {
		seen = nil
		srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			seen = append(seen, r.URL.Path)
			mu.Unlock()
			if strings.HasPrefix(r.URL.Path, "/releases/hop") {
				http.Redirect(w, r, "/secret/x.tgz", http.StatusFound)
				return
			}
			_, _ = io.WriteString(w, "ok")
		}))
		DeferCleanup(srv.Close)
	})
	get := func(gs []*urlscope.Guard, url string) error {
		c, err := urlscope.Client(srv.Client(), gs)
		Expect(err).ToNot(HaveOccurred())
		req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
		Expect(err).ToNot(HaveOccurred())
		resp, err := c.Do(req)
		if err == nil {
			_ = resp.Body.Close()
		}
		return err
	}

	It("judges every redirect hop before requesting it", func() {
		g := &urlscope.Guard{Who: "signer web"}
		p, err := urlscope.ParsePrefix("net.urls[0]", srv.URL+"/releases/")
		Expect(err).ToNot(HaveOccurred())
		g.Allow = []urlscope.Prefix{p}
		err = get([]*urlscope.Guard{g}, srv.URL+"/releases/hop")
		Expect(err).To(MatchError(urlscope.ErrRefused))
		Expect(err.Error()).To(ContainSubstring(`signer web: denied url "` + srv.URL + `/secret/x.tgz" by net.urls (no prefix holds it: default deny)`))
		Expect(seen).To(Equal([]string{"/releases/hop"}))
	})

	It("judges the address dialled, whatever the name (DNS rebinding)", func() {
		port := srv.URL[strings.LastIndexByte(srv.URL, ':')+1:]
		dial := func(g *urlscope.Guard, addr string) error {
			c, err := urlscope.Client(srv.Client(), []*urlscope.Guard{g})
			Expect(err).ToNot(HaveOccurred())
			conn, err := c.Transport.(*http.Transport).DialContext(context.Background(), "tcp", addr)
			if err == nil {
				_ = conn.Close()
			}
			return err
		}
		// A name that resolves to a loopback address, allowed by a prefix
		// that does not name that address, is refused where it is dialled.
		p, err := urlscope.ParsePrefix("net.urls[0]", "http://localhost.example.test:"+port+"/")
		Expect(err).ToNot(HaveOccurred())
		err = dial(&urlscope.Guard{Allow: []urlscope.Prefix{p}}, "localhost:"+port)
		Expect(errors.Is(err, urlscope.ErrRefused)).To(BeTrue(), "%v", err)
		Expect(dial(&urlscope.Guard{}, "127.0.0.1:"+port)).To(MatchError(ContainSubstring("a loopback address")))
		named, err := urlscope.ParsePrefix("net.urls[0]", "http://127.0.0.1:"+port+"/releases/")
		Expect(err).ToNot(HaveOccurred())
		Expect(dial(&urlscope.Guard{Allow: []urlscope.Prefix{named}}, "127.0.0.1:"+port)).To(Succeed())
		Expect(seen).To(BeEmpty())
	})

	It("returns the client unchanged without guards", func() {
		c := srv.Client()
		Expect(urlscope.Client(c, nil)).To(BeIdenticalTo(c))
		Expect(get(nil, srv.URL+"/releases/hop")).To(Succeed())
	})
})
