package archivehttp_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/internal/urlscope"
	"github.com/ccm-fleet/ccm/providers/archivehttp"
	"github.com/ccm-fleet/ccm/resources"
	"github.com/ccm-fleet/ccm/resources/archivetype"
)

// newProvider returns an http provider made with opts.
func newProvider(opts ...archivehttp.Option) (*archivehttp.Provider, *logBuffer) {
	log, buf := newLogger()
	p, err := archivehttp.NewFactory(log, opts...).New()
	Expect(err).NotTo(HaveOccurred())
	return p.(*archivehttp.Provider), buf
}

var _ = Describe("Provider Download", func() {
	var (
		srv  *archiveServer
		base string
		data []byte
		ctx  context.Context
	)

	BeforeEach(func() {
		srv = newServer()
		base = GinkgoT().TempDir()
		data = buildTar(true, file("app/bin/app", "#!/bin/sh\necho hi\n"))
		ctx = context.Background()
	})

	It("downloads to the name atomically with owner, group, mode and checksum", func() {
		url := srv.put("/app.tar.gz", data)
		p := props(base, "app.tar.gz", url, func(p *archivetype.Properties) {
			p.Checksum = strings.ToUpper(sha(data))
			p.Owner, p.Group = "nobody", "nogroup"
		})
		prov, _ := newProvider()
		Expect(prov.Download(ctx, p)).To(Succeed())

		Expect(os.ReadFile(p.Name)).To(Equal(data))
		fi, err := os.Stat(p.Name)
		Expect(err).NotTo(HaveOccurred())
		Expect(fi.Mode().Perm()).To(Equal(os.FileMode(0o600)), "CCM writes the archive 0600")
		st := fi.Sys().(*syscall.Stat_t)
		Expect(st.Uid).To(BeEquivalentTo(65534))
		Expect(st.Gid).To(BeEquivalentTo(65534))
		Expect(tree(base)).To(HaveLen(2), "only the directory and the archive")

		status, err := prov.Status(ctx, p)
		Expect(err).NotTo(HaveOccurred())
		Expect(status.Ensure).To(Equal("present"))
		Expect(status.Metadata.ArchiveExists).To(BeTrue())
		Expect(status.Metadata.Checksum).To(Equal(sha(data)))
		Expect(status.Metadata.Owner).To(Equal("nobody"))
		Expect(status.Metadata.Group).To(Equal("nogroup"))
		Expect(status.Metadata.Size).To(BeEquivalentTo(len(data)))
		Expect(status.Metadata.Provider).To(Equal("http"))
	})

	It("reports numeric owner and group as given when they match", func() {
		url := srv.put("/app.tar.gz", data)
		p := props(base, "app.tar.gz", url, func(p *archivetype.Properties) { p.Owner, p.Group = "65534", "65534" })
		prov, _ := newProvider()
		Expect(prov.Download(ctx, p)).To(Succeed())
		status, err := prov.Status(ctx, p)
		Expect(err).NotTo(HaveOccurred())
		Expect(status.Metadata.Owner).To(Equal("65534"))
		Expect(status.Metadata.Group).To(Equal("65534"))
	})

	It("replaces an existing archive", func() {
		url := srv.put("/app.tar.gz", data)
		p := props(base, "app.tar.gz", url)
		Expect(os.WriteFile(p.Name, []byte("old"), 0o600)).To(Succeed())
		prov, _ := newProvider()
		Expect(prov.Download(ctx, p)).To(Succeed())
		Expect(os.ReadFile(p.Name)).To(Equal(data))
	})

	It("reports a missing archive as absent", func() {
		p := props(base, "app.tar.gz", srv.URL+"/app.tar.gz", func(p *archivetype.Properties) { p.Creates = filepath.Join(base, "nope") })
		prov, _ := newProvider()
		status, err := prov.Status(ctx, p)
		Expect(err).NotTo(HaveOccurred())
		Expect(status.Ensure).To(Equal("absent"))
		Expect(status.Metadata.ArchiveExists).To(BeFalse())
		Expect(status.Metadata.CreatesExists).To(BeFalse())
	})

	It("refuses a directory at the archive path in Status", func() {
		p := props(base, "app.tar.gz", srv.URL+"/app.tar.gz")
		Expect(os.Mkdir(p.Name, 0o755)).To(Succeed())
		prov, _ := newProvider()
		_, err := prov.Status(ctx, p)
		Expect(err).To(MatchError(archivehttp.ErrNotRegular))
	})

	It("sends Basic auth from username and password, keeping them out of logs", func() {
		url := srv.put("/private/app.tar.gz", data)
		p := props(base, "app.tar.gz", url, func(p *archivetype.Properties) { p.Username, p.Password = authUser, authPass })
		prov, logs := newProvider()
		Expect(prov.Download(ctx, p)).To(Succeed())
		Expect(os.ReadFile(p.Name)).To(Equal(data))
		Expect(logs.String()).To(ContainSubstring("downloaded archive"))
		Expect(logs.String()).NotTo(ContainSubstring(authPass))
	})

	It("sends Basic auth from URL userinfo and redacts it from logs", func() {
		srv.put("/private/app.tar.gz", data)
		url := strings.Replace(srv.URL, "http://", "http://"+authUser+":"+authPass+"@", 1) + "/private/app.tar.gz"
		p := props(base, "app.tar.gz", url)
		prov, logs := newProvider()
		Expect(prov.Download(ctx, p)).To(Succeed())
		Expect(logs.String()).To(ContainSubstring("[redacted]@"))
		Expect(logs.String()).NotTo(SatisfyAny(ContainSubstring(authPass), ContainSubstring(authUser)))
	})

	It("sends custom headers", func() {
		url := srv.put("/header/app.tar.gz", data)
		p := props(base, "app.tar.gz", url, func(p *archivetype.Properties) {
			p.Headers = map[string]string{"X-Api-Token": headerVal}
		})
		prov, logs := newProvider()
		Expect(prov.Download(ctx, p)).To(Succeed())
		Expect(os.ReadFile(p.Name)).To(Equal(data))
		Expect(logs.String()).NotTo(ContainSubstring(headerVal))
	})

	DescribeTable("download failures leave nothing behind",
		func(path string, mutate func(p *archivetype.Properties, url string) string, sentinel error, wantErr ...string) {
			url := srv.put(path, data)
			dl := filepath.Join(base, "dl")
			Expect(os.Mkdir(dl, 0o755)).To(Succeed())
			p := props(dl, "app.tar.gz", url)
			if mutate != nil {
				p.URL = mutate(p, url)
				Expect(p.Validate()).To(Succeed())
			}
			before := tree(base)
			prov, logs := newProvider(archivehttp.WithMaxDownloadBytes(1024))
			err := prov.Download(ctx, p)
			Expect(err).To(MatchError(sentinel))
			for _, w := range wantErr {
				Expect(err.Error()).To(ContainSubstring(w))
			}
			Expect(err.Error() + logs.String()).NotTo(SatisfyAny(ContainSubstring(authPass), ContainSubstring(headerVal)))
			Expect(tree(base)).To(Equal(before), "a file or temporary file was left behind")
		},
		Entry("checksum mismatch", "/app.tar.gz", func(p *archivetype.Properties, url string) string {
			p.Checksum = strings.Repeat("ab", 32)
			return url
		}, archivehttp.ErrChecksumMismatch, "checksum mismatch", `expected "`+strings.Repeat("ab", 32)+`"`, "got "),
		Entry("404", "/app.tar.gz", func(p *archivetype.Properties, url string) string {
			return srv.URL + "/missing.tar.gz"
		}, archivehttp.ErrHTTPStatus, "unexpected HTTP status 404 (Not Found)", "/missing.tar.gz"),
		Entry("401 without credentials", "/private/app.tar.gz", nil, archivehttp.ErrHTTPStatus, "401"),
		Entry("401 with a wrong password", "/private/app.tar.gz", func(p *archivetype.Properties, url string) string {
			p.Username, p.Password = authUser, "wrong-"+headerVal
			return url
		}, archivehttp.ErrHTTPStatus, "401"),
		Entry("401 with wrong URL credentials, redacted", "/private/app.tar.gz", func(p *archivetype.Properties, url string) string {
			return strings.Replace(url, "http://", "http://"+authUser+":"+authPass+"x@", 1)
		}, archivehttp.ErrHTTPStatus, "401", "http://[redacted]@127.0.0.1"),
		Entry("403 without the header", "/header/app.tar.gz", nil, archivehttp.ErrHTTPStatus, "403"),
		Entry("oversize with Content-Length", "/big.tar.gz", func(p *archivetype.Properties, url string) string {
			srv.put("/big.tar.gz", make([]byte, 4096))
			return url
		}, archivehttp.ErrDownloadTooLarge, "Content-Length 4096 is more than 1024 bytes"),
		Entry("oversize streamed without Content-Length", "/chunked/big.tar.gz", func(p *archivetype.Properties, url string) string {
			srv.put("/chunked/big.tar.gz", make([]byte, 4096))
			return url
		}, archivehttp.ErrDownloadTooLarge, "more than 1024 bytes"),
	)

	It("fails for an unknown owner before requesting anything", func() {
		url := srv.put("/app.tar.gz", data)
		p := props(base, "app.tar.gz", url, func(p *archivetype.Properties) { p.Owner = "no-such-user-ccm" })
		prov, _ := newProvider()
		Expect(prov.Download(ctx, p)).To(MatchError(archivehttp.ErrUnknownAccount))
		Expect(srv.hits.Load()).To(BeZero())
	})

	It("gives up after its timeout when the context has no deadline", func() {
		url := srv.put("/block/app.tar.gz", data)
		p := props(base, "app.tar.gz", url)
		prov, _ := newProvider(archivehttp.WithTimeout(50 * time.Millisecond))
		err := prov.Download(ctx, p)
		Expect(errors.Is(err, context.DeadlineExceeded)).To(BeTrue(), "got %v", err)
		Expect(tree(base)).To(HaveLen(1))
	})

	It("honours cancellation of its context", func() {
		url := srv.put("/block/app.tar.gz", data)
		p := props(base, "app.tar.gz", url)
		prov, _ := newProvider()
		cctx, cancel := context.WithCancel(ctx)
		go func() {
			defer GinkgoRecover()
			Eventually(srv.hits.Load).Should(BeNumerically(">", 0))
			cancel()
		}()
		Expect(prov.Download(cctx, p)).To(MatchError(context.Canceled))
	})

	It("keeps credentials out of connection errors", func() {
		srv.Close()
		url := strings.Replace(srv.URL, "http://", "http://"+authUser+":"+authPass+"@", 1) + "/app.tar.gz"
		p := props(base, "app.tar.gz", url)
		prov, _ := newProvider()
		err := prov.Download(ctx, p)
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring("[redacted]@"))
		Expect(err.Error()).NotTo(SatisfyAny(ContainSubstring(authPass), ContainSubstring(authUser)))
	})

	It("uses the HTTP client it is given", func() {
		url := srv.put("/app.tar.gz", data)
		p := props(base, "app.tar.gz", url)
		rt := &countingTransport{next: http.DefaultTransport}
		prov, _ := newProvider(archivehttp.WithHTTPClient(&http.Client{Transport: rt}))
		Expect(prov.Download(ctx, p)).To(Succeed())
		Expect(rt.n).To(Equal(1))
	})
})

// What a signer's resource downloads is judged by the guards of its
// context (the agent puts them there: see agent/scope_agree_test.go and
// integration/urlscope_test.go for the policy end to end).
var _ = Describe("Provider Download under a signer's URL scope", func() {
	var (
		srv  *archiveServer
		base string
		data []byte
	)
	BeforeEach(func() {
		srv = newServer()
		base = GinkgoT().TempDir()
		data = buildTar(true, file("app/bin/app", "v1"))
	})
	guarded := func(allow ...string) context.Context {
		g := &urlscope.Guard{Who: "signer web"}
		for i, a := range allow {
			p, err := urlscope.ParsePrefix(fmt.Sprintf("net.urls[%d]", i), a)
			Expect(err).ToNot(HaveOccurred())
			g.Allow = append(g.Allow, p)
		}
		return urlscope.WithGuards(context.Background(), g)
	}

	It("refuses a loopback URL without net.urls, requesting nothing", func() {
		url := srv.put("/releases/app.tar.gz", data)
		p := props(base, "app.tar.gz", url)
		prov, _ := newProvider()
		before := tree(base)
		err := prov.Download(guarded(), p)
		Expect(err).To(MatchError(resources.ErrForbidden))
		Expect(err.Error()).To(ContainSubstring(`signer web: denied url "` + url + `" by net.urls (not set): 127.0.0.1 is a loopback address`))
		Expect(srv.hits.Load()).To(BeZero())
		Expect(tree(base)).To(Equal(before))
	})

	It("downloads below a net.urls prefix naming the address, and refuses a sibling", func() {
		url := srv.put("/releases/app.tar.gz", data)
		evil := srv.put("/releases-evil/app.tar.gz", data)
		prov, _ := newProvider()
		ctx := guarded(srv.URL + "/releases/")
		Expect(prov.Download(ctx, props(base, "app.tar.gz", url))).To(Succeed())
		err := prov.Download(ctx, props(base, "evil.tar.gz", evil))
		Expect(err).To(MatchError(resources.ErrForbidden))
		Expect(err.Error()).To(ContainSubstring("by net.urls (no prefix holds it: default deny)"))
		Expect(srv.requested()).To(Equal([]string{"/releases/app.tar.gz"}))
		Expect(filepath.Join(base, "evil.tar.gz")).ToNot(BeAnExistingFile())
	})

	It("refuses a redirect out of scope at the hop, never requesting it", func() {
		srv.put("/secret/app.tar.gz", data)
		url := srv.redirect("/releases/app.tar.gz", "/secret/app.tar.gz")
		prov, _ := newProvider()
		before := tree(base)
		err := prov.Download(guarded(srv.URL+"/releases/"), props(base, "app.tar.gz", url))
		Expect(err).To(MatchError(resources.ErrForbidden))
		Expect(err.Error()).To(ContainSubstring(`redirect: signer web: denied url "` + srv.URL + `/secret/app.tar.gz" by net.urls (no prefix holds it: default deny)`))
		Expect(srv.requested()).To(Equal([]string{"/releases/app.tar.gz"}))
		Expect(tree(base)).To(Equal(before))
	})
})

var _ = Describe("Provider Download of what is not an archive", func() {
	It("removes it and fails, leaving nothing", func() {
		srv := newServer()
		base := GinkgoT().TempDir()
		for _, name := range []string{"page.tar.gz", "page.tgz", "page.zip", "page.tar"} {
			url := srv.put("/"+name, []byte("<!DOCTYPE html><html><body>admin console: secret-token-123</body></html>\n"))
			prov, _ := newProvider()
			before := tree(base)
			err := prov.Download(context.Background(), props(base, name, url))
			Expect(err).To(MatchError(archivehttp.ErrNotArchive), name)
			Expect(err.Error()).ToNot(ContainSubstring("secret-token"))
			Expect(tree(base)).To(Equal(before), name)
		}
	})

	It("keeps archives of each format", func() {
		srv := newServer()
		base := GinkgoT().TempDir()
		for name, data := range map[string][]byte{
			"a.tar.gz": buildTar(true, file("x", "1")),
			"a.tar":    buildTar(false, file("x", "1")),
			"a.zip":    buildZip(file("x", "1")),
		} {
			prov, _ := newProvider()
			Expect(prov.Download(context.Background(), props(base, name, srv.put("/"+name, data)))).To(Succeed(), name)
		}
	})
})

type countingTransport struct {
	next http.RoundTripper
	n    int
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n++
	return c.next.RoundTrip(r)
}
