package sources_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nkeys"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/sources"
)

// tarball makes a gzip tar archive of the given headers and bodies.
func tarball(entries ...any) []byte {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for i := 0; i < len(entries); i += 2 {
		hdr := entries[i].(*tar.Header)
		body, _ := entries[i+1].(string)
		if hdr.Typeflag == tar.TypeReg {
			hdr.Size = int64(len(body))
		}
		Expect(tw.WriteHeader(hdr)).To(Succeed())
		if body != "" {
			_, err := tw.Write([]byte(body))
			Expect(err).NotTo(HaveOccurred())
		}
	}
	Expect(tw.Close()).To(Succeed())
	Expect(gz.Close()).To(Succeed())
	return buf.Bytes()
}

func reg(name string) *tar.Header { return &tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644} }

var _ = Describe("Parse", func() {
	DescribeTable("accepts CCM's sources",
		func(in string, kind sources.Kind, shown, location string) {
			s, err := sources.Parse(in)
			Expect(err).NotTo(HaveOccurred())
			Expect(s.Kind).To(Equal(kind))
			Expect(s.String()).To(Equal(shown))
			Expect(s.Location()).To(Equal(location))
		},
		Entry("a local file", "/etc/choria/ccm/manifests/base.yaml", sources.KindFile, "/etc/choria/ccm/manifests/base.yaml", "/etc/choria/ccm/manifests/base.yaml"),
		Entry("an object", "obj://ccm-manifests/app.tar.gz", sources.KindObject, "obj://ccm-manifests/app.tar.gz", "obj://ccm-manifests/app.tar.gz"),
		Entry("https", "https://config.example.com/manifests/web.tar.gz", sources.KindHTTP, "https://config.example.com/manifests/web.tar.gz", "https://config.example.com/manifests/web.tar.gz"),
		Entry("https with basic auth, the password never shown", "https://user:s3cret-canary@config.example.com/web.tar.gz", sources.KindHTTP, "https://user:xxxxx@config.example.com/web.tar.gz", "https://config.example.com/web.tar.gz"),
	)

	It("takes a sha256 pin from the fragment and leaves it out of the URL fetched", func() {
		pin := strings.Repeat("ab", 32)
		s, err := sources.Parse("https://h.example/web.tar.gz#sha256=" + pin)
		Expect(err).NotTo(HaveOccurred())
		Expect(s.SHA256).To(Equal(pin))
		Expect(s.URL.String()).To(Equal("https://h.example/web.tar.gz"))
	})

	DescribeTable("refuses",
		func(in, msg string) {
			_, err := sources.Parse(in)
			Expect(err).To(MatchError(sources.ErrSource))
			Expect(err.Error()).To(ContainSubstring(msg))
		},
		Entry("a relative path", "manifests/base.yaml", "absolute path"),
		Entry("an odd scheme", "ftp://h/x.tar.gz", "unknown scheme"),
		Entry("a bad bucket", "obj://bad.bucket/x.tar.gz", "bucket"),
		Entry("a key with ..", "obj://b/../x.tar.gz", "clean key"),
		Entry("a bad pin", "https://h/x.tar.gz#sha256=zz", "#sha256="),
	)
})

var _ = Describe("Pack and Unpack", func() {
	It("round-trips a bundle directory, byte for byte the same each time", func() {
		dir := GinkgoT().TempDir()
		Expect(os.WriteFile(filepath.Join(dir, "manifest.yaml"), []byte("ccm:\n  resources: []\n"), 0o644)).To(Succeed())
		Expect(os.MkdirAll(filepath.Join(dir, "templates"), 0o755)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(dir, "templates", "motd.tmpl"), []byte("hello {{ facts.identity }}\n"), 0o644)).To(Succeed())
		a, err := sources.Pack(dir)
		Expect(err).NotTo(HaveOccurred())
		b, err := sources.Pack(dir)
		Expect(err).NotTo(HaveOccurred())
		Expect(sources.Digest(a)).To(Equal(sources.Digest(b)))

		out := filepath.Join(GinkgoT().TempDir(), "unpacked")
		Expect(sources.Unpack(a, out)).To(Succeed())
		Expect(os.ReadFile(filepath.Join(out, "templates", "motd.tmpl"))).To(Equal([]byte("hello {{ facts.identity }}\n")))
		fi, err := os.Stat(filepath.Join(out, "manifest.yaml"))
		Expect(err).NotTo(HaveOccurred())
		Expect(fi.Mode().Perm()).To(Equal(os.FileMode(0o600)))
	})

	It("refuses to pack a directory holding a symlink", func() {
		dir := GinkgoT().TempDir()
		Expect(os.WriteFile(filepath.Join(dir, "manifest.yaml"), []byte("ccm: {}\n"), 0o644)).To(Succeed())
		Expect(os.Symlink("/etc/shadow", filepath.Join(dir, "shadow"))).To(Succeed())
		_, err := sources.Pack(dir)
		Expect(err).To(MatchError(sources.ErrBundle))
		Expect(err.Error()).To(ContainSubstring("shadow: only regular files"))
	})

	DescribeTable("refuses hostile archives and writes nothing outside the target",
		func(msg string, entries ...any) {
			parent := GinkgoT().TempDir()
			out := filepath.Join(parent, "unpacked")
			err := sources.Unpack(tarball(entries...), out)
			Expect(err).To(MatchError(sources.ErrBundle))
			Expect(err.Error()).To(ContainSubstring(msg))
			left, _ := os.ReadDir(parent)
			Expect(left).To(BeEmpty(), "the half-written bundle is removed and nothing lands beside it")
		},
		Entry("a path leaving the bundle", "not a clean path", reg("manifest.yaml"), "ccm: {}", reg("../escape-canary"), "x"),
		Entry("an absolute path", "not a clean path", reg("manifest.yaml"), "ccm: {}", reg("/tmp/abs-canary"), "x"),
		Entry("a symlink", "only regular files", reg("manifest.yaml"), "ccm: {}", &tar.Header{Name: "link", Typeflag: tar.TypeSymlink, Linkname: "/etc/shadow"}, nil),
		Entry("a hard link", "only regular files", reg("manifest.yaml"), "ccm: {}", &tar.Header{Name: "link", Typeflag: tar.TypeLink, Linkname: "manifest.yaml"}, nil),
		Entry("a duplicate entry", "appears twice", reg("manifest.yaml"), "ccm: {}", reg("manifest.yaml"), "ccm: {}"),
		Entry("no manifest.yaml", "no manifest.yaml", reg("other.yaml"), "x"),
	)

	It("refuses more entries than MaxEntries", func() {
		var entries []any
		for i := 0; i <= sources.MaxEntries; i++ {
			entries = append(entries, &tar.Header{Name: "d" + strings.Repeat("x", 3) + string(rune('a'+i%26)) + "/" + time.Duration(i).String(), Typeflag: tar.TypeDir, Mode: 0o755}, nil)
		}
		err := sources.Unpack(tarball(entries...), filepath.Join(GinkgoT().TempDir(), "u"))
		Expect(err).To(MatchError(sources.ErrBundle))
		Expect(err.Error()).To(ContainSubstring("more than 4096 entries"))
	})

	It("refuses data that is not gzip", func() {
		err := sources.Unpack([]byte("manifest.yaml"), filepath.Join(GinkgoT().TempDir(), "u"))
		Expect(err).To(MatchError(sources.ErrBundle))
	})
})

var _ = Describe("Signature", func() {
	var (
		kp   nkeys.KeyPair
		data []byte
	)
	BeforeEach(func() {
		var err error
		kp, err = nkeys.CreateUser()
		Expect(err).NotTo(HaveOccurred())
		data = tarball(reg("manifest.yaml"), "ccm: {}")
	})

	It("verifies what it signed, through its metadata", func() {
		sig, err := sources.SignBundle(data, "obj://ccm-manifests/app.tar.gz", time.Now(), kp)
		Expect(err).NotTo(HaveOccurred())
		meta := sig.Metadata()
		Expect(meta).To(HaveKeyWithValue(sources.MetaLocation, "obj://ccm-manifests/app.tar.gz"))
		got, err := sources.SignatureFrom(func(k string) string { return meta[k] })
		Expect(err).NotTo(HaveOccurred())
		Expect(got.Verify(data, "obj://ccm-manifests/app.tar.gz")).To(Succeed())
		pub, _ := kp.PublicKey()
		Expect(got.Signer).To(Equal(pub))
	})

	It("refuses other bytes, another location, another signer and a forged time", func() {
		const at = "obj://ccm-manifests/staging/app.tar.gz"
		sig, err := sources.SignBundle(data, at, time.Now(), kp)
		Expect(err).NotTo(HaveOccurred())
		Expect(sig.Verify(append(bytes.Clone(data), 0), at)).To(MatchError(sources.ErrBadSignature))
		Expect(sig.Verify(data, "obj://ccm-manifests/staging/db.tar.gz")).To(MatchError(sources.ErrBadSignature))
		// The same base name in another bucket or below another key.
		err = sig.Verify(data, "obj://other/prod/app.tar.gz")
		Expect(err).To(MatchError(sources.ErrBadSignature))
		Expect(err).To(MatchError(ContainSubstring(`signed for "obj://ccm-manifests/staging/app.tar.gz", fetched from "obj://other/prod/app.tar.gz"`)))
		Expect(sig.Verify(data, "obj://ccm-manifests/prod/app.tar.gz")).To(MatchError(sources.ErrBadSignature))
		Expect(sig.Verify(data, "https://cdn.example/staging/app.tar.gz")).To(MatchError(sources.ErrBadSignature))

		other, _ := nkeys.CreateUser()
		pub, _ := other.PublicKey()
		forged := *sig
		forged.Signer = pub
		Expect(forged.Verify(data, at)).To(MatchError(sources.ErrBadSignature))

		later := *sig
		later.Created = sig.Created.Add(time.Hour)
		Expect(later.Verify(data, at)).To(MatchError(sources.ErrBadSignature))

		// A location edited in the metadata does not verify either.
		moved := *sig
		moved.Location = "obj://other/prod/app.tar.gz"
		Expect(moved.Verify(data, moved.Location)).To(MatchError(sources.ErrBadSignature))
	})

	It("refuses a signature of the base name alone, as signed before, saying to sign it again", func() {
		sig, err := sources.SignBundle(data, "obj://ccm-manifests/app.tar.gz", time.Now(), kp)
		Expect(err).NotTo(HaveOccurred())
		meta := sig.Metadata()
		delete(meta, sources.MetaLocation)
		meta["Ccm-Bundle-Name"] = "app.tar.gz"
		got, err := sources.SignatureFrom(func(k string) string { return meta[k] })
		Expect(err).NotTo(HaveOccurred())
		err = got.Verify(data, "obj://ccm-manifests/app.tar.gz")
		Expect(err).To(MatchError(sources.ErrBadSignature))
		Expect(err).To(MatchError(ContainSubstring(`signed for the name "app.tar.gz" only`)))

		_, err = sources.SignBundle(data, "app.tar.gz", time.Now(), kp)
		Expect(err).To(MatchError(ContainSubstring("the location must be obj://bucket/key or a URL")))
	})

	It("says unsigned when there is no signature at all", func() {
		_, err := sources.SignatureFrom(func(string) string { return "" })
		Expect(err).To(MatchError(sources.ErrUnsigned))
	})
})

var _ = Describe("Fetcher", func() {
	It("fetches an https bundle with basic auth from the URL and its signature from the headers", func() {
		kp, _ := nkeys.CreateUser()
		data := tarball(reg("manifest.yaml"), "ccm: {}")
		var sig *sources.Signature
		srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if u, p, ok := r.BasicAuth(); !ok || u != "ops" || p != "pw-canary" {
				http.Error(w, "no", http.StatusUnauthorized)
				return
			}
			for k, v := range sig.Metadata() {
				w.Header().Set(k, v)
			}
			_, _ = w.Write(data)
		}))
		defer srv.Close()
		src, err := sources.Parse(strings.Replace(srv.URL, "https://", "https://ops:pw-canary@", 1) + "/b/web.tar.gz")
		Expect(err).NotTo(HaveOccurred())
		// Signed for the URL without its credentials.
		sig, err = sources.SignBundle(data, srv.URL+"/b/web.tar.gz", time.Now(), kp)
		Expect(err).NotTo(HaveOccurred())
		f := &sources.Fetcher{HTTP: srv.Client()}
		got, err := f.Fetch(context.Background(), src)
		Expect(err).NotTo(HaveOccurred())
		Expect(got.Data).To(Equal(data))
		Expect(got.Signature).NotTo(BeNil())
		Expect(got.Signature.Verify(got.Data, src.Location())).To(Succeed())

		bad, _ := sources.Parse(srv.URL + "/b/web.tar.gz")
		_, err = f.Fetch(context.Background(), bad)
		Expect(err).To(MatchError(sources.ErrFetch))
		Expect(err.Error()).To(ContainSubstring("401"))
	})

	It("follows a redirect on the source's own host, and refuses one to a loopback or metadata address the source does not name (issue 39 finding 5)", func() {
		var mu sync.Mutex
		var otherHits int
		other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			otherHits++
			mu.Unlock()
			_, _ = w.Write([]byte("internal"))
		}))
		defer other.Close()
		data := tarball(reg("manifest.yaml"), "ccm: {}")
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/moved.tar.gz":
				http.Redirect(w, r, "/web.tar.gz", http.StatusFound)
			case "/other.tar.gz":
				http.Redirect(w, r, other.URL+"/admin", http.StatusFound)
			case "/metadata.tar.gz":
				http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
			default:
				_, _ = w.Write(data)
			}
		}))
		defer srv.Close()
		fetch := func(path string) error {
			src, err := sources.Parse(srv.URL + path)
			Expect(err).NotTo(HaveOccurred())
			_, err = (&sources.Fetcher{}).Fetch(context.Background(), src)
			return err
		}
		Expect(fetch("/moved.tar.gz")).To(Succeed())
		err := fetch("/other.tar.gz")
		Expect(err).To(MatchError(sources.ErrFetch))
		Expect(err.Error()).To(ContainSubstring(`denied url "` + other.URL + `/admin" by net.urls (not set): 127.0.0.1 is a loopback address`))
		err = fetch("/metadata.tar.gz")
		Expect(err).To(MatchError(sources.ErrFetch))
		Expect(err.Error()).To(ContainSubstring("a cloud metadata address"))
		mu.Lock()
		defer mu.Unlock()
		Expect(otherHits).To(BeZero())
	})

	It("gives up on a server that stops sending when the fetch's time is up", func() {
		release := make(chan struct{})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte("\x1f\x8b"))
			w.(http.Flusher).Flush()
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}))
		defer srv.Close()
		defer close(release)
		src, _ := sources.Parse(srv.URL + "/slow.tar.gz")
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		_, err := (&sources.Fetcher{}).Fetch(ctx, src)
		Expect(err).To(MatchError(sources.ErrFetch))
		Expect(err).To(MatchError(context.DeadlineExceeded))
	})

	It("refuses a body larger than MaxBundleBytes", func() {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			chunk := bytes.Repeat([]byte("x"), 1<<20)
			for range sources.MaxBundleBytes>>20 + 1 {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		}))
		defer srv.Close()
		src, _ := sources.Parse(srv.URL + "/big.tar.gz")
		_, err := (&sources.Fetcher{}).Fetch(context.Background(), src)
		Expect(err).To(MatchError(sources.ErrFetch))
		Expect(err.Error()).To(ContainSubstring("larger than"))
	})
})
