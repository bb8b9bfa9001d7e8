package archivehttp_test

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ccm-fleet/ccm/resources/archivetype"
)

// member is one archive entry a test builds.
type member struct {
	name string
	body string
	mode int64 // permission and setuid/setgid/sticky bits; 0644 or 0755 when 0
	typ  byte  // tar type flag; tar.TypeReg when 0
	link string
}

func file(name, body string) member { return member{name: name, body: body} }
func dir(name string) member        { return member{name: name, typ: tar.TypeDir} }
func symlink(name, target string) member {
	return member{name: name, typ: tar.TypeSymlink, link: target}
}
func hardlink(name, target string) member {
	return member{name: name, typ: tar.TypeLink, link: target}
}

var mtime = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

func (m member) tarHeader() *tar.Header {
	typ, mode := m.typ, m.mode
	if typ == 0 {
		typ = tar.TypeReg
	}
	if mode == 0 {
		mode = 0o644
		if typ == tar.TypeDir {
			mode = 0o755
		}
	}
	h := &tar.Header{Name: m.name, Typeflag: typ, Mode: mode, Linkname: m.link, ModTime: mtime, Format: tar.FormatPAX}
	if typ == tar.TypeReg {
		h.Size = int64(len(m.body))
	}
	if typ == tar.TypeChar || typ == tar.TypeBlock {
		h.Devmajor, h.Devminor = 1, 3
	}
	return h
}

// buildTar returns a tar archive of members, gzip-compressed when gz.
func buildTar(gz bool, members ...member) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, m := range members {
		h := m.tarHeader()
		Expect(tw.WriteHeader(h)).To(Succeed())
		if h.Typeflag == tar.TypeReg {
			_, err := tw.Write([]byte(m.body))
			Expect(err).NotTo(HaveOccurred())
		}
	}
	Expect(tw.Close()).To(Succeed())
	if !gz {
		return buf.Bytes()
	}
	var out bytes.Buffer
	zw := gzip.NewWriter(&out)
	_, err := zw.Write(buf.Bytes())
	Expect(err).NotTo(HaveOccurred())
	Expect(zw.Close()).To(Succeed())
	return out.Bytes()
}

// buildZip returns a zip archive of members; symlinks store their target as
// content, tar device and fifo types become the matching zip modes.
func buildZip(members ...member) []byte {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, m := range members {
		h := &zip.FileHeader{Name: m.name, Method: zip.Deflate, Modified: mtime}
		perm := fs.FileMode(m.mode) & fs.ModePerm
		if perm == 0 {
			perm = 0o644
		}
		mode := perm
		if m.mode&0o4000 != 0 {
			mode |= fs.ModeSetuid
		}
		body := m.body
		switch m.typ {
		case tar.TypeDir:
			mode = fs.ModeDir | 0o755
			if !strings.HasSuffix(h.Name, "/") {
				h.Name += "/"
			}
		case tar.TypeSymlink:
			mode, body = fs.ModeSymlink|0o777, m.link
		case tar.TypeChar:
			mode |= fs.ModeDevice | fs.ModeCharDevice
		case tar.TypeFifo:
			mode |= fs.ModeNamedPipe
		}
		h.SetMode(mode)
		w, err := zw.CreateHeader(h)
		Expect(err).NotTo(HaveOccurred())
		_, err = w.Write([]byte(body))
		Expect(err).NotTo(HaveOccurred())
	}
	Expect(zw.Close()).To(Succeed())
	return buf.Bytes()
}

// build returns members as an archive of the format named by ext.
func build(ext string, members ...member) []byte {
	switch ext {
	case ".tar.gz", ".tgz":
		return buildTar(true, members...)
	case ".tar":
		return buildTar(false, members...)
	case ".zip":
		return buildZip(members...)
	}
	Fail("unknown extension " + ext)
	return nil
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

const (
	authUser  = "deploy"
	authPass  = "s3cret-pass"
	headerVal = "tok3n-value"
)

// archiveServer serves archives by path. Paths under /private/ need Basic
// auth, under /header/ the X-Api-Token header, under /chunked/ are sent
// without Content-Length, and /block/ answers only when the client gives up.
type archiveServer struct {
	*httptest.Server
	mu    sync.Mutex
	files map[string][]byte
	hits  atomic.Int64
	// redirects maps a path to where it redirects; seen are the paths
	// requested, in order.
	redirects map[string]string
	seen      []string
}

// redirect makes path redirect to to.
func (s *archiveServer) redirect(path, to string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.redirects[path] = to
	return s.URL + path
}

// requested returns the paths requested so far.
func (s *archiveServer) requested() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.seen...)
}

func newServer() *archiveServer {
	s := &archiveServer{files: map[string][]byte{}, redirects: map[string]string{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	DeferCleanup(s.Close)
	return s
}

func (s *archiveServer) put(path string, data []byte) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.files[path] = data
	return s.URL + path
}

func (s *archiveServer) serve(w http.ResponseWriter, r *http.Request) {
	s.hits.Add(1)
	s.mu.Lock()
	s.seen = append(s.seen, r.URL.Path)
	to, redirect := s.redirects[r.URL.Path]
	s.mu.Unlock()
	if redirect {
		http.Redirect(w, r, to, http.StatusFound)
		return
	}
	switch {
	case strings.HasPrefix(r.URL.Path, "/private/"):
		u, p, ok := r.BasicAuth()
		if !ok || u != authUser || p != authPass {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			http.Error(w, "unauthorised", http.StatusUnauthorized)
			return
		}
	case strings.HasPrefix(r.URL.Path, "/header/"):
		if r.Header.Get("X-Api-Token") != headerVal {
			http.Error(w, "forbidden", http.StatusForbidden)
			return
		}
	case strings.HasPrefix(r.URL.Path, "/block/"):
		<-r.Context().Done()
		return
	}
	s.mu.Lock()
	data, ok := s.files[r.URL.Path]
	s.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	if strings.HasPrefix(r.URL.Path, "/chunked/") {
		for len(data) > 0 {
			n := min(len(data), 512)
			_, _ = w.Write(data[:n])
			w.(http.Flusher).Flush()
			data = data[n:]
		}
		return
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	_, _ = w.Write(data)
}

// tree records every path under dir with its type, mode and content, to
// prove nothing was written where it should not be.
func tree(dir string) map[string]string {
	out := map[string]string{}
	Expect(filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		desc := info.Mode().String()
		switch {
		case info.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			desc += " " + string(b)
		case info.Mode()&fs.ModeSymlink != 0:
			t, err := os.Readlink(p)
			if err != nil {
				return err
			}
			desc += " -> " + t
		}
		out[p] = desc
		return nil
	})).To(Succeed())
	return out
}

// props returns validated properties for an archive saved as dir/name from url.
func props(dirPath, name, url string, mutate ...func(*archivetype.Properties)) *archivetype.Properties {
	p := &archivetype.Properties{URL: url, Owner: "root", Group: "root"}
	p.Name = filepath.Join(dirPath, name)
	for _, m := range mutate {
		m(p)
	}
	Expect(p.Validate()).To(Succeed())
	return p
}

// logBuffer is a concurrency-safe log sink.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(b)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func newLogger() (*slog.Logger, *logBuffer) {
	lb := &logBuffer{}
	return slog.New(slog.NewTextHandler(lb, &slog.HandlerOptions{Level: slog.LevelDebug})), lb
}
