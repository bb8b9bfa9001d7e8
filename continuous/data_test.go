package continuous_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/broker/brokertest"
	"github.com/ccm-fleet/ccm/continuous"
	"github.com/ccm-fleet/ccm/sources"
)

// hieraDoc is an external data document: data with a hierarchy resolved
// against facts.
const hieraDoc = `
data:
  port: 80
  motd: plain
hierarchy:
  order: ["role:{{ lookup('facts.role') }}"]
overrides:
  "role:web":
    port: 8080
`

var _ = Describe("DataSource", func() {
	facts := map[string]any{"role": "web"}

	check := func(url string, js jetstream.JetStream) {
		GinkgoHelper()
		u, err := continuous.ParseDataURL(url)
		Expect(err).NotTo(HaveOccurred())
		d := &continuous.DataSource{URL: u, JS: js}
		data, err := d.Resolve(context.Background(), facts)
		Expect(err).NotTo(HaveOccurred())
		Expect(data).To(HaveKeyWithValue("port", BeNumerically("==", 8080)))
		Expect(data).To(HaveKeyWithValue("motd", "plain"))
	}

	It("resolves a file:// document's hierarchy against the facts", func() {
		p := filepath.Join(GinkgoT().TempDir(), "data.yaml")
		Expect(os.WriteFile(p, []byte(hieraDoc), 0o600)).To(Succeed())
		check("file://"+p, nil)
	})

	It("resolves a document named by a plain absolute path, as CCM's agent takes it (issue 41 item 2)", func() {
		p := filepath.Join(GinkgoT().TempDir(), "data.yaml")
		Expect(os.WriteFile(p, []byte(hieraDoc), 0o600)).To(Succeed())
		check(p, nil)
	})

	It("checks an http(s) document against its #sha256= pin, and refuses another digest", func() {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(hieraDoc)) }))
		defer srv.Close()
		check(srv.URL+"/data.yaml#sha256="+sources.Digest([]byte(hieraDoc)), nil)
		u, err := continuous.ParseDataURL(srv.URL + "/data.yaml#sha256=" + strings.Repeat("0", 64))
		Expect(err).NotTo(HaveOccurred())
		_, err = (&continuous.DataSource{URL: u}).Read(context.Background())
		Expect(err).To(MatchError(continuous.ErrData))
		Expect(err).To(MatchError(sources.ErrChecksum))
		Expect(err.Error()).To(ContainSubstring("pinned " + strings.Repeat("0", 64)))
	})

	It("refuses an http document larger than MaxDataBytes", func() {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write([]byte(strings.Repeat("#", continuous.MaxDataBytes+10)))
		}))
		defer srv.Close()
		u, err := continuous.ParseDataURL(srv.URL + "/data.yaml")
		Expect(err).NotTo(HaveOccurred())
		_, err = (&continuous.DataSource{URL: u}).Read(context.Background())
		Expect(err).To(MatchError(continuous.ErrData))
		Expect(err.Error()).To(ContainSubstring("larger than"))
	})

	It("gives up on a server that never answers when the context ends", func() {
		release := make(chan struct{})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}))
		defer srv.Close()
		defer close(release)
		u, err := continuous.ParseDataURL(srv.URL + "/data.yaml")
		Expect(err).NotTo(HaveOccurred())
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		_, err = (&continuous.DataSource{URL: u}).Read(ctx)
		Expect(err).To(MatchError(continuous.ErrData))
		Expect(err).To(MatchError(context.DeadlineExceeded))
	})

	It("never shows a URL's password in a parse error", func() {
		_, err := continuous.ParseDataURL("https://ops:pw-canary@example.net/d.yaml#md5=00")
		Expect(err).To(MatchError(continuous.ErrDataURL))
		Expect(err.Error()).NotTo(ContainSubstring("pw-canary"))
		Expect(err.Error()).To(ContainSubstring("the only fragment taken is #sha256="))
	})

	It("logs an annotation it does not understand as CCM does (issue 41 item 12)", func() {
		p := filepath.Join(GinkgoT().TempDir(), "data.yaml")
		Expect(os.WriteFile(p, []byte("data:\n  # @requiired\n  user: bob\n"), 0o600)).To(Succeed())
		u, err := continuous.ParseDataURL(p)
		Expect(err).NotTo(HaveOccurred())
		var buf bytes.Buffer
		_, err = (&continuous.DataSource{URL: u, Log: slog.New(slog.NewTextHandler(&buf, nil))}).Resolve(context.Background(), facts)
		Expect(err).NotTo(HaveOccurred())
		Expect(buf.String()).To(ContainSubstring(`level=WARN msg="Unrecognized annotation in hiera data" key=user annotation=@requiired`))
	})

	It("reads a kv://bucket/key document", func() {
		b := brokertest.Start(GinkgoT())
		nc, err := nats.Connect(b.ClientURL())
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(nc.Close)
		js, err := jetstream.New(nc)
		Expect(err).NotTo(HaveOccurred())
		kv, err := js.CreateKeyValue(context.Background(), jetstream.KeyValueConfig{Bucket: "ccm-data"})
		Expect(err).NotTo(HaveOccurred())
		_, err = kv.Put(context.Background(), "common", []byte(hieraDoc))
		Expect(err).NotTo(HaveOccurred())
		check("kv://ccm-data/common", js)
	})

	It("reads an http(s) document", func() {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(hieraDoc)) }))
		defer srv.Close()
		check(srv.URL+"/data.yaml", nil)
	})

	It("refuses a redirect of an http document to a loopback address it does not name (issue 39 finding 5)", func() {
		hits := 0
		other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { hits++; _, _ = w.Write([]byte(hieraDoc)) }))
		defer other.Close()
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, other.URL+"/data.yaml", http.StatusFound)
		}))
		defer srv.Close()
		u, err := continuous.ParseDataURL(srv.URL + "/data.yaml")
		Expect(err).NotTo(HaveOccurred())
		_, err = (&continuous.DataSource{URL: u}).Resolve(context.Background(), facts)
		Expect(err).To(MatchError(ContainSubstring(`external data ` + srv.URL + `/data.yaml: denied url "` + other.URL + `/data.yaml" by net.urls (not set): 127.0.0.1 is a loopback address`)))
		Expect(hits).To(BeZero())
	})

	It("refuses a document with an unknown key, naming it", func() {
		p := filepath.Join(GinkgoT().TempDir(), "data.yaml")
		Expect(os.WriteFile(p, []byte("ccm:\n  resources: []\nbogus: 1\n"), 0o600)).To(Succeed())
		u, _ := continuous.ParseDataURL("file://" + p)
		_, err := (&continuous.DataSource{URL: u}).Resolve(context.Background(), facts)
		Expect(err).To(MatchError(ContainSubstring("bogus")))
	})
})
