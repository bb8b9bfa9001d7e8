package integration_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
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
)

// Round 4, issue 39 finding 5: URLs were not judged. A signer scoped to
// its web root downloaded any loopback or internal URL with archive; a
// redirect got around the extension check; the response, not an archive,
// was kept in the signer's tree and read back through a noop diff. Each
// spec asks a real agent through the real ccm-orch, and ccm-orch policy
// check must say what the agent does.
var _ = Describe("Adversarial: URL scopes (round 4)", Ordered, func() {
	const canary = "url-canary-4be0c7a1"
	var (
		f                      *fleet
		dir, policy, factsFile string
		www                    string
		web, fetch             signingKey
		srv                    *httptest.Server
		mu                     sync.Mutex
		seen                   []string
		seq                    int
	)
	requested := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}

	BeforeAll(func() {
		dir = GinkgoT().TempDir()
		www = filepath.Join(dir, "www")
		Expect(os.MkdirAll(www, 0o755)).To(Succeed())
		var buf bytes.Buffer
		gz := gzip.NewWriter(&buf)
		tw := tar.NewWriter(gz)
		Expect(tw.WriteHeader(&tar.Header{Name: "app/bin/app", Mode: 0o755, Size: 3, Typeflag: tar.TypeReg})).To(Succeed())
		_, _ = tw.Write([]byte("v1\n"))
		Expect(tw.Close()).To(Succeed())
		Expect(gz.Close()).To(Succeed())
		archive := buf.Bytes()
		srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			seen = append(seen, r.URL.Path)
			mu.Unlock()
			switch {
			case r.URL.Path == "/releases/hop.tar.gz":
				http.Redirect(w, r, "/internal/app.tar.gz", http.StatusFound)
			case strings.HasSuffix(r.URL.Path, "/page.tar.gz"):
				_, _ = w.Write([]byte("<!DOCTYPE html><html><body>internal console " + canary + "</body></html>\n"))
			case strings.HasPrefix(r.URL.Path, "/internal/"):
				_, _ = w.Write([]byte(canary))
			default:
				_, _ = w.Write(archive)
			}
		}))
		DeferCleanup(srv.Close)
		web, fetch = newSigningKey(dir, "web"), newSigningKey(dir, "fetch")
		policy = policyFile(dir,
			signerEntry("web", web.pub, "archive, file", "file: {paths: [\""+www+"/\"]}"),
			signerEntry("fetch", fetch.pub, "archive, file", "file: {paths: [\""+www+"/\"]}",
				"net: {urls: [\""+srv.URL+"/releases/\"]}"),
		)
		f = startFleetWith(fleetOptions{history: true, config: agent.Config{Policy: policy}}, 1, "urlscope", map[string]any{"role": "web"})
		for _, facts := range f.factsOf() {
			b, err := json.Marshal(facts)
			Expect(err).ToNot(HaveOccurred())
			factsFile = filepath.Join(dir, "facts.json")
			Expect(os.WriteFile(factsFile, b, 0o644)).To(Succeed())
		}
	})

	// ensure runs ccm-orch ensure archive NAME --url URL as key and
	// returns the one host's entry of its JSON result and the output.
	ensure := func(key signingKey, name, url string, noop bool) (map[string]any, string) {
		GinkgoHelper()
		args := []string{"ensure", "archive", filepath.Join(www, name), "--url", url, "--owner", "root", "--group", "root", "--key", key.seedFile, "--diff", "--json"}
		if noop {
			args = append(args, "--noop")
		}
		_, out, errOut := f.orch(args...)
		Expect(out + errOut).ToNot(ContainSubstring(canary))
		var doc map[string]any
		Expect(json.Unmarshal([]byte(out), &doc)).To(Succeed(), out+errOut)
		hosts := doc["hosts"].([]any)
		Expect(hosts).To(HaveLen(1))
		id, _ := doc["request_id"].(string)
		Eventually(func() string {
			_, shown, _ := f.orch("history", "show", id, "--json")
			return shown
		}).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(And(ContainSubstring(id), Not(ContainSubstring(canary))))
		return hosts[0].(map[string]any), out
	}
	// check runs ccm-orch policy check on the same archive and returns
	// its exit code and output.
	check := func(signer, name, url string) (int, string) {
		GinkgoHelper()
		seq++
		er, err := protocol.NewEnsureRequest("archive", map[string]any{"name": filepath.Join(www, name), "url": url, "owner": "root", "group": "root"})
		Expect(err).ToNot(HaveOccurred())
		req := protocol.NewFleetRequest(fmt.Sprintf("urlscope-check-%d", seq), time.Now(), time.Minute)
		req.Ensure = er
		body, err := json.Marshal(req)
		Expect(err).ToNot(HaveOccurred())
		reqFile := filepath.Join(dir, fmt.Sprintf("request-%d.json", seq))
		Expect(os.WriteFile(reqFile, body, 0o644)).To(Succeed())
		code, out, errOut := f.orch("policy", "check", policy, "--key", signer, "--request", reqFile, "--facts", factsFile)
		return code, out + errOut
	}

	It("refuses a loopback archive URL for a signer scoped to its web root without net.urls, real or noop: nothing requested or written", func() {
		url := srv.URL + "/internal/app.tar.gz"
		for _, noop := range []bool{false, true} {
			h, out := ensure(web, "app.tar.gz", url, noop)
			Expect(h["error"]).To(HaveKeyWithValue("code", "forbidden"), out)
			Expect(h["error"]).To(HaveKeyWithValue("message", ContainSubstring(`denied url "`+url+`" by net.urls (not set): 127.0.0.1 is a loopback address`)), out)
		}
		Expect(requested()).To(BeEmpty())
		Expect(filepath.Join(www, "app.tar.gz")).ToNot(BeAnExistingFile())
		code, out := check("web", "app.tar.gz", url)
		Expect(code).To(Equal(int(protocol.ExitFailed)), out)
		Expect(out).To(ContainSubstring(`denied url "` + url + `" by net.urls (not set)`))
	})

	It("downloads below the net.urls prefix naming the address and refuses a sibling path, as policy check says", func() {
		h, out := ensure(fetch, "app.tar.gz", srv.URL+"/releases/app.tar.gz", false)
		Expect(h["error"]).To(BeNil(), out)
		Expect(filepath.Join(www, "app.tar.gz")).To(BeAnExistingFile())
		code, out := check("fetch", "app.tar.gz", srv.URL+"/releases/app.tar.gz")
		Expect(code).To(Equal(0), out)

		evil := srv.URL + "/releases-evil/app.tar.gz"
		h, out = ensure(fetch, "evil.tar.gz", evil, false)
		Expect(h["error"]).To(HaveKeyWithValue("code", "forbidden"), out)
		Expect(h["error"]).To(HaveKeyWithValue("message", ContainSubstring(`denied url "`+evil+`" by net.urls (no prefix holds it: default deny)`)), out)
		code, out = check("fetch", "evil.tar.gz", evil)
		Expect(code).To(Equal(int(protocol.ExitFailed)), out)
		Expect(out).To(ContainSubstring(`denied url "` + evil + `" by net.urls (no prefix holds it: default deny)`))
		Expect(requested()).To(Equal([]string{"/releases/app.tar.gz"}))
		Expect(filepath.Join(www, "evil.tar.gz")).ToNot(BeAnExistingFile())
	})

	It("refuses a redirect from an allowed URL to one out of scope at the hop, which is never requested", func() {
		_, out := ensure(fetch, "hop.tar.gz", srv.URL+"/releases/hop.tar.gz", false)
		Expect(out).To(ContainSubstring(`redirect: signer fetch: denied url \"` + srv.URL + `/internal/app.tar.gz\" by net.urls (no prefix holds it: default deny)`))
		Expect(requested()).To(ContainElement("/releases/hop.tar.gz"))
		Expect(requested()).ToNot(ContainElement("/internal/app.tar.gz"))
		Expect(filepath.Join(www, "hop.tar.gz")).ToNot(BeAnExistingFile())
	})

	It("removes a download that is not an archive and fails, so no noop diff reads it back", func() {
		_, out := ensure(fetch, "page.tar.gz", srv.URL+"/releases/page.tar.gz", false)
		Expect(out).To(ContainSubstring("the download is not an archive of its declared format"))
		Expect(filepath.Join(www, "page.tar.gz")).ToNot(BeAnExistingFile())
		entries, err := os.ReadDir(www)
		Expect(err).ToNot(HaveOccurred())
		for _, e := range entries {
			Expect(e.Name()).To(Equal("app.tar.gz"), "only the real archive is in the tree")
		}
		ensure(fetch, "page.tar.gz", srv.URL+"/releases/page.tar.gz", true)
	})
})
