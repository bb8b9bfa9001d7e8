package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gexec"

	"github.com/ccm-fleet/ccm/broker/brokertest"
	"github.com/ccm-fleet/ccm/sources"
)

// bundleOf packs a bundle as CCM's manifests page makes one (tar -C dir
// -czf m.tgz .): manifest.yaml writing target from the file motd beside
// it.
func bundleOf(target, motd string) []byte {
	GinkgoHelper()
	dir := GinkgoT().TempDir()
	Expect(os.WriteFile(filepath.Join(dir, "motd"), []byte(motd), 0o644)).To(Succeed())
	Expect(os.WriteFile(filepath.Join(dir, "manifest.yaml"), []byte(`ccm:
  resources:
    - file:
        - "`+target+`":
            ensure: present
            source: motd
            owner: root
            group: root
            mode: "0644"
`), 0o644)).To(Succeed())
	data, err := sources.Pack(dir)
	Expect(err).NotTo(HaveOccurred())
	return data
}

// policyFile writes a policy trusting kp for the resource types allow.
func policyFile(kp nkeys.KeyPair, allow string) string {
	GinkgoHelper()
	pub, err := kp.PublicKey()
	Expect(err).NotTo(HaveOccurred())
	p := filepath.Join(GinkgoT().TempDir(), "policy.yaml")
	Expect(os.WriteFile(p, []byte(fmt.Sprintf("signers:\n  - name: ops\n    public_key: %s\n    allow: [%s]\n", pub, allow)), 0o600)).To(Succeed())
	return p
}

// Issue 41 item 4: CCM's apply takes https://.../manifest.tar.gz and
// obj://BUCKET/KEY (its manifests page). Before, ccm-agent apply said
// "stat .../https:/...: no such file or directory". It now fetches them
// with the continuous agent's fetcher and verification: bounded, scoped,
// and applied only when pinned with #sha256= or signed by a --policy key.
var _ = Describe("ccm-agent apply of a remote bundle over https (issue 41 item 4)", Ordered, func() {
	var bin, target string
	var srv *httptest.Server
	var env []string
	var hits atomic.Int64
	var data, signed []byte
	var sigMeta map[string]string
	ops, _ := nkeys.CreateUser()

	BeforeAll(func() {
		var err error
		bin, err = gexec.Build("github.com/ccm-fleet/ccm/cmd/ccm-agent")
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(gexec.CleanupBuildArtifacts)
		target = filepath.Join(GinkgoT().TempDir(), "motd")
		data = bundleOf(target, "CCM Managed\n")
		signed = bundleOf(target, "signed\n")
		other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			hits.Add(1)
			_, _ = w.Write(data)
		}))
		DeferCleanup(other.Close)
		srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/manifest.tar.gz":
				_, _ = w.Write(data)
			case "/signed.tar.gz":
				for k, v := range sigMeta {
					w.Header().Set(k, v)
				}
				_, _ = w.Write(signed)
			case "/huge.tar.gz":
				chunk := bytes.Repeat([]byte("x"), 1<<20)
				for range sources.MaxBundleBytes>>20 + 2 {
					if _, err := w.Write(chunk); err != nil {
						return
					}
				}
			case "/loopback.tar.gz":
				http.Redirect(w, r, other.URL+"/manifest.tar.gz", http.StatusFound)
			default:
				http.NotFound(w, r)
			}
		}))
		DeferCleanup(srv.Close)
		sig, err := sources.SignBundle(signed, srv.URL+"/signed.tar.gz", time.Now(), ops)
		Expect(err).NotTo(HaveOccurred())
		sigMeta = sig.Metadata()
		env = tlsTrust(srv)
	})
	BeforeEach(func() { _ = os.Remove(target) })

	It("applies a bundle pinned with #sha256=, reading files beside its manifest", func() {
		code, out, errOut := runBinary(bin, env, "apply", srv.URL+"/manifest.tar.gz#sha256="+sources.Digest(data))
		Expect(code).To(Equal(0), out+errOut)
		Expect(os.ReadFile(target)).To(Equal([]byte("CCM Managed\n")))
		Expect(out).To(ContainSubstring("file#" + target + " changed"))
	})

	It("applies a bundle signed by a key of --policy for its URL", func() {
		code, out, errOut := runBinary(bin, env, "apply", srv.URL+"/signed.tar.gz", "--policy", policyFile(ops, "file"), "--cache-dir", GinkgoT().TempDir())
		Expect(code).To(Equal(0), out+errOut)
		Expect(os.ReadFile(target)).To(Equal([]byte("signed\n")))
	})

	DescribeTable("refuses, naming the problem, and changes nothing",
		func(args func() []string, want string) {
			code, out, errOut := runBinary(bin, env, append([]string{"apply", "--cache-dir", GinkgoT().TempDir()}, args()...)...)
			Expect(code).To(Equal(1), out)
			Expect(errOut).To(ContainSubstring(want))
			Expect(strings.Count(strings.TrimSpace(errOut), "\n")).To(BeZero(), "one line: "+errOut)
			Expect(target).NotTo(BeAnExistingFile())
		},
		Entry("neither pinned nor signed", func() []string { return []string{srv.URL + "/manifest.tar.gz"} }, "bundle is not signed: remote bundles are applied only when signed by a key the policy trusts or pinned by a checksum"),
		Entry("another digest", func() []string {
			return []string{srv.URL + "/manifest.tar.gz#sha256=" + strings.Repeat("ab", 32)}
		}, "bundle checksum does not match its pin: sha256 "),
		Entry("a signed bundle without --policy", func() []string { return []string{srv.URL + "/signed.tar.gz"} }, "is not trusted by this agent's policy"),
		Entry("a signer the policy does not allow files", func() []string {
			return []string{srv.URL + "/signed.tar.gz", "--policy", policyFile(ops, "exec")}
		}, "signer ops"),
		Entry("a body over the bundle limit", func() []string {
			return []string{srv.URL + "/huge.tar.gz#sha256=" + strings.Repeat("ab", 32)}
		}, "larger than 16777216 bytes"),
		Entry("a redirect to a loopback address the URL does not name", func() []string {
			return []string{srv.URL + "/loopback.tar.gz#sha256=" + sources.Digest(data)}
		}, "is a loopback address"),
		Entry("a missing bundle", func() []string { return []string{srv.URL + "/nope.tar.gz#sha256=" + sources.Digest(data)} }, "404"),
		Entry("another scheme", func() []string { return []string{"ftp://example.net/m.tar.gz"} }, `unknown scheme "ftp"`),
	)

	It("never followed the redirect to the other server", func() {
		Expect(hits.Load()).To(BeZero())
	})
})

var _ = Describe("ccm-agent apply obj:// (issue 41 item 4)", func() {
	var target, url string
	var obs jetstream.ObjectStore
	ops, _ := nkeys.CreateUser()

	put := func(key string, data []byte, kp nkeys.KeyPair) {
		GinkgoHelper()
		meta := jetstream.ObjectMeta{Name: key}
		if kp != nil {
			sig, err := sources.SignBundle(data, "obj://CCM/"+key, time.Now(), kp)
			Expect(err).NotTo(HaveOccurred())
			meta.Metadata = sig.Metadata()
		}
		_, err := obs.Put(context.Background(), meta, bytes.NewReader(data))
		Expect(err).NotTo(HaveOccurred())
	}

	BeforeEach(func() {
		dir := GinkgoT().TempDir()
		for _, k := range []string{"CCM_SERVER", "NATS_URL", "NATS_CONTEXT"} {
			GinkgoT().Setenv(k, "")
		}
		GinkgoT().Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config"))
		GinkgoT().Setenv("HOME", dir)
		target = filepath.Join(dir, "motd")
		b := brokertest.Start(GinkgoT())
		url = b.ClientURL()
		nc, err := nats.Connect(url)
		Expect(err).ToNot(HaveOccurred())
		DeferCleanup(nc.Close)
		js, err := jetstream.New(nc)
		Expect(err).ToNot(HaveOccurred())
		obs, err = js.CreateObjectStore(context.Background(), jetstream.ObjectStoreConfig{Bucket: "CCM"})
		Expect(err).ToNot(HaveOccurred())
	})

	It("applies a bundle signed by a key of --policy, as CCM's page shows with --context", func() {
		put("manifest.tgz", bundleOf(target, "from the bucket\n"), ops)
		code, out, errOut := agent("apply", "obj://CCM/manifest.tgz", "--server", url, "--policy", policyFile(ops, "file"), "--cache-dir", GinkgoT().TempDir())
		Expect(code).To(Equal(0), out+errOut)
		Expect(os.ReadFile(target)).To(Equal([]byte("from the bucket\n")))
	})

	It("refuses an older signed bundle after a newer one was taken (signed state never goes backwards), and takes the same one again", func() {
		cache := filepath.Join(GinkgoT().TempDir(), "cache")
		pol := policyFile(ops, "file")
		data := bundleOf(target, "v2\n")
		sig, err := sources.SignBundle(data, "obj://CCM/manifest.tgz", time.Now(), ops)
		Expect(err).NotTo(HaveOccurred())
		_, err = obs.Put(context.Background(), jetstream.ObjectMeta{Name: "manifest.tgz", Metadata: sig.Metadata()}, bytes.NewReader(data))
		Expect(err).NotTo(HaveOccurred())
		args := []string{"apply", "obj://CCM/manifest.tgz", "--server", url, "--policy", pol, "--cache-dir", cache}
		code, out, errOut := agent(args...)
		Expect(code).To(Equal(0), out+errOut)
		Expect(os.ReadFile(target)).To(Equal([]byte("v2\n")))
		code, out, errOut = agent(args...)
		Expect(code).To(Equal(0), out+errOut)

		old := bundleOf(target, "replayed-canary\n")
		oldSig, err := sources.SignBundle(old, "obj://CCM/manifest.tgz", time.Now().Add(-time.Hour), ops)
		Expect(err).NotTo(HaveOccurred())
		_, err = obs.Put(context.Background(), jetstream.ObjectMeta{Name: "manifest.tgz", Metadata: oldSig.Metadata()}, bytes.NewReader(old))
		Expect(err).NotTo(HaveOccurred())
		code, _, errOut = agent(args...)
		Expect(code).To(Equal(1))
		Expect(errOut).To(ContainSubstring("bundle refused: signed at "))
		Expect(errOut).To(ContainSubstring("before the bundle already taken"))
		Expect(os.ReadFile(target)).To(Equal([]byte("v2\n")))
	})

	DescribeTable("refuses, naming the problem, and changes nothing",
		func(setup func() []string, want string) {
			args := setup()
			code, out, errOut := agent(append([]string{"apply", "--cache-dir", GinkgoT().TempDir()}, args...)...)
			Expect(code).To(Equal(1), out)
			Expect(errOut).To(ContainSubstring(want))
			Expect(target).NotTo(BeAnExistingFile())
		},
		Entry("an unsigned bundle", func() []string {
			put("manifest.tgz", bundleOf(target, "unsigned-canary\n"), nil)
			return []string{"obj://CCM/manifest.tgz", "--server", url, "--policy", policyFile(ops, "file")}
		}, "bundle is not signed"),
		Entry("a bundle signed by a key the policy does not trust", func() []string {
			stranger, _ := nkeys.CreateUser()
			put("manifest.tgz", bundleOf(target, "stranger-canary\n"), stranger)
			return []string{"obj://CCM/manifest.tgz", "--server", url, "--policy", policyFile(ops, "file")}
		}, "is not trusted by this agent's policy"),
		Entry("a bundle signed for another key of the bucket", func() []string {
			data := bundleOf(target, "moved-canary\n")
			sig, err := sources.SignBundle(data, "obj://CCM/other.tgz", time.Now(), ops)
			Expect(err).NotTo(HaveOccurred())
			_, err = obs.Put(context.Background(), jetstream.ObjectMeta{Name: "manifest.tgz", Metadata: sig.Metadata()}, bytes.NewReader(data))
			Expect(err).NotTo(HaveOccurred())
			return []string{"obj://CCM/manifest.tgz", "--server", url, "--policy", policyFile(ops, "file")}
		}, "bundle signature does not verify"),
		Entry("a missing object", func() []string {
			return []string{"obj://CCM/nope.tgz", "--server", url, "--policy", policyFile(ops, "file")}
		}, "obj://CCM/nope.tgz"),
		Entry("no connection", func() []string { return []string{"obj://CCM/manifest.tgz"} }, "no NATS connection for obj://CCM/manifest.tgz: give --server URL or --context NAME"),
	)
})
