package agent_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/agent"
	"github.com/ccm-fleet/ccm/protocol"
	"github.com/ccm-fleet/ccm/trust/policy"
	"github.com/ccm-fleet/ccm/trust/scope"
)

// urlServer serves archives and records every path requested.
type urlServer struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string
}

func (s *urlServer) requested() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.seen...)
}

func tarGz(name, body string) []byte {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	Expect(tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg})).To(Succeed())
	_, err := tw.Write([]byte(body))
	Expect(err).ToNot(HaveOccurred())
	Expect(tw.Close()).To(Succeed())
	Expect(gz.Close()).To(Succeed())
	return buf.Bytes()
}

// Issue 39 finding 5: what a signer's archive downloads is judged by its
// net.urls (deny.net.urls), each redirect hop and the address dialled
// included, and without net.urls loopback, link-local and metadata
// addresses are refused. The agent and ccm-orch policy check agree.
var _ = Describe("URL scopes on a running agent", Ordered, func() {
	var (
		f          *fixture
		srv        *urlServer
		dir        string
		pol        *policy.Policy
		web, fetch scopeKey
		seq        int
		facts      = map[string]any{"identity": "web-1", "os": "debian", "role": "web"}
	)

	BeforeAll(func() {
		dir = GinkgoT().TempDir()
		Expect(os.MkdirAll(filepath.Join(dir, "www"), 0o755)).To(Succeed())
		archive := tarGz("app/bin/app", "v1\n")
		srv = &urlServer{}
		srv.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			srv.mu.Lock()
			srv.seen = append(srv.seen, r.URL.Path)
			srv.mu.Unlock()
			switch {
			case r.URL.Path == "/releases/hop.tar.gz":
				http.Redirect(w, r, "/secret/app.tar.gz", http.StatusFound)
			case strings.HasSuffix(r.URL.Path, "/page.tar.gz"):
				_, _ = w.Write([]byte("<!DOCTYPE html><html><body>internal admin: url-canary-7d1e</body></html>\n"))
			default:
				_, _ = w.Write(archive)
			}
		}))
		DeferCleanup(srv.Close)
		web, fetch = newScopeKey(), newScopeKey()
		text := fmt.Sprintf(`
signers:
  - name: web
    public_key: %s
    allow: [archive, file]
    file:
      paths: [%s/www/]
  - name: fetch
    public_key: %s
    allow: [archive, file]
    file:
      paths: [%s/www/]
    net:
      urls: [%s/releases/]
`, web.pub, dir, fetch.pub, dir, srv.URL)
		path := filepath.Join(dir, "policy.yaml")
		Expect(os.WriteFile(path, []byte(text), 0o644)).To(Succeed())
		var err error
		pol, err = policy.LoadPolicy(path)
		Expect(err).ToNot(HaveOccurred())
		f = startAgentAs(agent.Config{Identity: "web-1", Policy: path, StateDir: filepath.Join(dir, "state")}, map[string]any{"os": "debian", "role": "web"})
	})

	archive := func(name, url string) map[string]any {
		return map[string]any{"name": filepath.Join(dir, "www", name), "url": url, "owner": "root", "group": "root"}
	}
	// send sends the archive as signer k (name) and checks that policy
	// check reaches the same verdict.
	send := func(k scopeKey, signer string, props map[string]any, noop bool) (*protocol.FleetReply, *policy.CheckReport) {
		seq++
		req := ensureRequest(fmt.Sprintf("urlscope-%03d", seq), time.Minute, "archive", props)
		req.Noop = noop
		body, err := json.Marshal(req)
		Expect(err).ToNot(HaveOccurred())
		rep, err := pol.CheckOffline(context.Background(), policy.OfflineCheck{Signer: signer, Facts: facts, Request: body, Resolver: scope.HostResolver()})
		Expect(err).ToNot(HaveOccurred())
		reply := f.sendSigned("web-1", k, req)
		forbidden := reply.Error != nil && reply.Error.Code == protocol.CodeForbidden
		Expect(!forbidden).To(Equal(rep.Allowed()), "agent: %+v\ncheck: %v", reply.Error, rep.Decisions)
		return reply, rep
	}
	refusedURL := func(rep *policy.CheckReport) string {
		for _, d := range rep.Decisions {
			if !d.Allowed {
				return d.String()
			}
		}
		return ""
	}

	It("refuses a loopback URL for a signer without net.urls: nothing downloaded, no request made", func() {
		url := srv.URL + "/releases/app.tar.gz"
		for _, noop := range []bool{false, true} {
			reply, rep := send(web, "web", archive("app.tar.gz", url), noop)
			Expect(reply.Error).ToNot(BeNil())
			Expect(reply.Error.Code).To(Equal(protocol.CodeForbidden))
			Expect(reply.Error.Message).To(ContainSubstring(`signer web: denied url "` + url + `" by net.urls (not set): 127.0.0.1 is a loopback address`))
			Expect(refusedURL(rep)).To(ContainSubstring(`denied url "` + url + `" by net.urls (not set)`))
		}
		Expect(srv.requested()).To(BeEmpty())
		Expect(filepath.Join(dir, "www", "app.tar.gz")).ToNot(BeAnExistingFile())
	})

	It("downloads below a net.urls prefix that names the address, and refuses a sibling path", func() {
		reply, _ := send(fetch, "fetch", archive("app.tar.gz", srv.URL+"/releases/app.tar.gz"), false)
		Expect(reply.Error).To(BeNil())
		Expect(reply.Events).To(HaveLen(1))
		Expect(reply.Events[0].Failed).To(BeFalse(), "%v", reply.Events[0].Errors)
		Expect(filepath.Join(dir, "www", "app.tar.gz")).To(BeAnExistingFile())

		evil := srv.URL + "/releases-evil/app.tar.gz"
		reply, rep := send(fetch, "fetch", archive("evil.tar.gz", evil), false)
		Expect(reply.Error).ToNot(BeNil())
		Expect(reply.Error.Code).To(Equal(protocol.CodeForbidden))
		Expect(reply.Error.Message).To(ContainSubstring(`denied url "` + evil + `" by net.urls (no prefix holds it: default deny)`))
		Expect(refusedURL(rep)).To(ContainSubstring(evil))
		Expect(srv.requested()).To(Equal([]string{"/releases/app.tar.gz"}))
		Expect(filepath.Join(dir, "www", "evil.tar.gz")).ToNot(BeAnExistingFile())
	})

	It("refuses a redirect out of scope at the hop, which is never requested", func() {
		reply, _ := send(fetch, "fetch", archive("hop.tar.gz", srv.URL+"/releases/hop.tar.gz"), false)
		Expect(reply.Error).To(BeNil())
		Expect(reply.Events).To(HaveLen(1))
		Expect(reply.Events[0].Failed).To(BeTrue())
		Expect(strings.Join(reply.Events[0].Errors, "\n")).To(ContainSubstring(`redirect: signer fetch: denied url "` + srv.URL + `/secret/app.tar.gz" by net.urls (no prefix holds it: default deny)`))
		Expect(srv.requested()).To(ContainElement("/releases/hop.tar.gz"))
		Expect(srv.requested()).ToNot(ContainElement("/secret/app.tar.gz"))
		Expect(filepath.Join(dir, "www", "hop.tar.gz")).ToNot(BeAnExistingFile())
	})

	It("removes a download that is not an archive and fails, leaving nothing to read back", func() {
		before, err := os.ReadDir(filepath.Join(dir, "www"))
		Expect(err).ToNot(HaveOccurred())
		reply, _ := send(fetch, "fetch", archive("page.tar.gz", srv.URL+"/releases/page.tar.gz"), false)
		Expect(reply.Error).To(BeNil())
		Expect(reply.Events).To(HaveLen(1))
		Expect(reply.Events[0].Failed).To(BeTrue())
		Expect(strings.Join(reply.Events[0].Errors, "\n")).To(ContainSubstring("not an archive"))
		after, err := os.ReadDir(filepath.Join(dir, "www"))
		Expect(err).ToNot(HaveOccurred())
		Expect(after).To(Equal(before))
		raw, err := json.Marshal(reply)
		Expect(err).ToNot(HaveOccurred())
		Expect(string(raw)).ToNot(ContainSubstring("url-canary-7d1e"))
		// A noop run afterwards has nothing of the page to show.
		reply, _ = send(fetch, "fetch", archive("page.tar.gz", srv.URL+"/releases/page.tar.gz"), true)
		raw, err = json.Marshal(reply)
		Expect(err).ToNot(HaveOccurred())
		Expect(string(raw)).ToNot(ContainSubstring("url-canary-7d1e"))
	})
})
