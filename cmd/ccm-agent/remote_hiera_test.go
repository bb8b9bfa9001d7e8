package main

import (
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"

	"github.com/ccm-fleet/ccm/broker/brokertest"
	"github.com/ccm-fleet/ccm/continuous"
	"github.com/ccm-fleet/ccm/sources"
)

// remoteHieraDoc is a hiera document served over https and kv://.
const remoteHieraDoc = `data:
  user: bob
hierarchy:
  order: ["role:{{ lookup('facts.role') }}"]
overrides:
  "role:web":
    user: www
`

// tlsTrust writes srv's certificate to a file and returns the environment
// that makes the real binary trust it (Go reads SSL_CERT_FILE).
func tlsTrust(srv *httptest.Server) []string {
	GinkgoHelper()
	p := filepath.Join(GinkgoT().TempDir(), "ca.pem")
	Expect(os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644)).To(Succeed())
	return []string{"SSL_CERT_FILE=" + p, "SSL_CERT_DIR=" + filepath.Dir(p)}
}

// runBinary runs the built ccm-agent with env added and returns its exit
// status, stdout and stderr.
func runBinary(bin string, env []string, args ...string) (int, string, string) {
	GinkgoHelper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	s, err := gexec.Start(cmd, GinkgoWriter, GinkgoWriter)
	Expect(err).ToNot(HaveOccurred())
	Eventually(s).WithTimeout(120 * time.Second).Should(gexec.Exit())
	return s.ExitCode(), string(s.Out.Contents()), string(s.Err.Contents())
}

// Issue 41 item 3: CCM's hiera page reads hiera data from https:// (basic
// auth in the URL) and kv://; "ccm ensure --hiera https://..." fetches
// it. Before, ccm-agent ignored a URL given to ensure --hiera (a later
// lookup failed with "missing key") and hiera parse said "no such file".
var _ = Describe("ccm-agent remote hiera data (issue 41 item 3)", Ordered, func() {
	var bin, dir string
	var srv *httptest.Server
	var env []string
	var hits atomic.Int64
	pin := sources.Digest([]byte(remoteHieraDoc))

	BeforeAll(func() {
		var err error
		bin, err = gexec.Build("github.com/ccm-fleet/ccm/cmd/ccm-agent")
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(gexec.CleanupBuildArtifacts)
		other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			hits.Add(1)
			_, _ = w.Write([]byte("data: {user: evil}\n"))
		}))
		DeferCleanup(other.Close)
		srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/site.yaml":
				_, _ = w.Write([]byte(remoteHieraDoc))
			case "/private.yaml":
				if u, p, ok := r.BasicAuth(); !ok || u != "ops" || p != "pw-canary" {
					http.Error(w, "no", http.StatusUnauthorized)
					return
				}
				_, _ = w.Write([]byte(remoteHieraDoc))
			case "/huge.yaml":
				chunk := []byte("# " + strings.Repeat("x", 1<<16) + "\n")
				for range continuous.MaxDataBytes/len(chunk) + 2 {
					if _, err := w.Write(chunk); err != nil {
						return
					}
				}
			case "/loopback.yaml":
				http.Redirect(w, r, other.URL+"/admin", http.StatusFound)
			default:
				http.NotFound(w, r)
			}
		}))
		DeferCleanup(srv.Close)
		env = tlsTrust(srv)
	})
	BeforeEach(func() { dir = GinkgoT().TempDir() })

	It("hiera parse resolves an https:// document, with basic auth from the URL, as CCM's page shows", func() {
		code, out, errOut := runBinary(bin, env, "hiera", "parse", srv.URL+"/site.yaml", "role=web")
		Expect(code).To(Equal(0), errOut)
		Expect(out).To(Equal("{\n  \"user\": \"www\"\n}\n"))

		authed := strings.Replace(srv.URL, "https://", "https://ops:pw-canary@", 1) + "/private.yaml"
		code, out, errOut = runBinary(bin, env, "hiera", "parse", authed, "role=db")
		Expect(code).To(Equal(0), errOut)
		Expect(out).To(Equal("{\n  \"user\": \"bob\"\n}\n"))

		code, _, errOut = runBinary(bin, env, "hiera", "parse", srv.URL+"/private.yaml")
		Expect(code).To(Equal(1))
		Expect(errOut).To(ContainSubstring("401"))
		Expect(errOut).NotTo(ContainSubstring("pw-canary"))
	})

	It("ensure --hiera fetches a pinned https:// document and uses its data", func() {
		target := filepath.Join(dir, "motd")
		code, out, errOut := runBinary(bin, env, "ensure", "file", target, "--content", "{{ lookup('data.user') }}", "--hiera", srv.URL+"/site.yaml#sha256="+pin, "--fact", "role=web")
		Expect(code).To(Equal(0), out+errOut)
		Expect(os.ReadFile(target)).To(Equal([]byte("www")))
	})

	DescribeTable("ensure --hiera refuses, naming the problem, and changes nothing",
		func(url func() string, want string) {
			target := filepath.Join(dir, "motd")
			code, out, errOut := runBinary(bin, env, "ensure", "file", target, "--content", "{{ lookup('data.user') }}", "--hiera", url())
			Expect(code).To(Equal(1), out)
			Expect(errOut).To(ContainSubstring(want))
			Expect(strings.Count(strings.TrimSpace(errOut), "\n")).To(BeZero(), "one line")
			Expect(target).NotTo(BeAnExistingFile())
		},
		Entry("an unpinned URL", func() string { return srv.URL + "/site.yaml" }, "a remote data document must be pinned: add #sha256="),
		Entry("another digest", func() string { return srv.URL + "/site.yaml#sha256=" + strings.Repeat("ab", 32) }, "bundle checksum does not match its pin: sha256 "+pin),
		Entry("a response over 1 MiB", func() string { return srv.URL + "/huge.yaml#sha256=" + pin }, "larger than 1048576 bytes"),
		Entry("a redirect to a loopback address the URL does not name", func() string { return srv.URL + "/loopback.yaml#sha256=" + pin }, "is a loopback address"),
		Entry("a missing document", func() string { return srv.URL + "/nope.yaml#sha256=" + pin }, "404"),
		Entry("kv://", func() string { return "kv://CCM/data" }, "kv:// is read by hiera parse only; here give a path or an https:// URL pinned with #sha256="),
		Entry("another scheme", func() string { return "ftp://example.net/site.yaml" }, `unknown scheme "ftp"`),
	)

	It("never followed the redirect to the other server", func() {
		Expect(hits.Load()).To(BeZero())
	})
})

var _ = Describe("ccm-agent hiera parse kv:// (issue 41 item 3)", func() {
	BeforeEach(func() {
		dir := GinkgoT().TempDir()
		for _, k := range []string{"CCM_SERVER", "NATS_URL", "NATS_CONTEXT"} {
			GinkgoT().Setenv(k, "")
		}
		GinkgoT().Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config"))
		GinkgoT().Setenv("HOME", dir)
	})

	It("reads the document from the bucket with --server, as CCM's page shows with --context", func() {
		b := brokertest.Start(GinkgoT())
		nc, err := nats.Connect(b.ClientURL())
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(nc.Close)
		js, err := jetstream.New(nc)
		Expect(err).ToNot(HaveOccurred())
		kv, err := js.CreateKeyValue(context.Background(), jetstream.KeyValueConfig{Bucket: "CCM"})
		Expect(err).ToNot(HaveOccurred())
		_, err = kv.PutString(context.Background(), "data", remoteHieraDoc)
		Expect(err).ToNot(HaveOccurred())

		code, out, errOut := agent("hiera", "parse", "kv://CCM/data", "--server", b.ClientURL(), "role=web")
		Expect(code).To(Equal(0), errOut)
		Expect(out).To(Equal("{\n  \"user\": \"www\"\n}\n"))

		code, _, errOut = agent("hiera", "parse", "kv://CCM/missing", "--server", b.ClientURL())
		Expect(code).To(Equal(1))
		Expect(errOut).To(ContainSubstring("kv://CCM/missing"))
		Expect(errOut).To(ContainSubstring("key not found"))
	})

	It("says which flags give the connection when there is none", func() {
		code, _, errOut := agent("hiera", "parse", "kv://CCM/data")
		Expect(code).To(Equal(1))
		Expect(errOut).To(ContainSubstring("hiera: no NATS connection for kv://CCM/data: give --server URL or --context NAME (or set CCM_SERVER, NATS_URL or NATS_CONTEXT)"))
	})
})
