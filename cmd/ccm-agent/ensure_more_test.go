package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func tarball(files map[string]string) []byte {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for name, body := range files {
		Expect(tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg})).To(Succeed())
		_, err := tw.Write([]byte(body))
		Expect(err).ToNot(HaveOccurred())
	}
	Expect(tw.Close()).To(Succeed())
	Expect(gz.Close()).To(Succeed())
	return buf.Bytes()
}

var _ = Describe("ccm-agent ensure archive", func() {
	It("downloads and extracts a tarball from a local server, then is stable", func() {
		body := tarball(map[string]string{"app/bin/app": "#!/bin/sh\n", "app/README": "hello\n"})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(body) }))
		DeferCleanup(srv.Close)
		dir := GinkgoT().TempDir()
		args := []string{"ensure", "archive", filepath.Join(dir, "app.tar.gz"),
			"--url", srv.URL + "/app.tar.gz", "--extract-parent", filepath.Join(dir, "opt"),
			"--creates", filepath.Join(dir, "opt", "app", "bin", "app"), "--owner", "root", "--group", "root"}

		code, out, errOut := agent(append(args, "--noop")...)
		Expect(code).To(Equal(5), errOut)
		Expect(out).To(ContainSubstring("Would have downloaded. Would have extracted"))
		Expect(filepath.Join(dir, "opt")).ToNot(BeADirectory())

		code, out, errOut = agent(args...)
		Expect(code).To(Equal(0), errOut)
		Expect(out).To(ContainSubstring("changed"))
		Expect(os.ReadFile(filepath.Join(dir, "opt", "app", "README"))).To(Equal([]byte("hello\n")))

		code, out, _ = agent(args...)
		Expect(code).To(Equal(0))
		Expect(out).To(ContainSubstring("stable"))
	})
})

var _ = Describe("ccm-agent ensure scaffold", func() {
	It("renders, is stable, and reports one changed file under noop after a template edit", func() {
		dir := GinkgoT().TempDir()
		src := filepath.Join(dir, "templates")
		Expect(os.MkdirAll(src, 0o755)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(src, "app.conf"), []byte("host = [[ facts.identity ]]\n"), 0o644)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(src, "other.conf"), []byte("static\n"), 0o644)).To(Succeed())
		target := filepath.Join(dir, "etc", "app")
		args := []string{"ensure", "scaffold", target, "--source", src, "--identity", "web7"}

		code, out, errOut := agent(args...)
		Expect(code).To(Equal(0), errOut)
		Expect(out).To(ContainSubstring("changed"))
		Expect(os.ReadFile(filepath.Join(target, "app.conf"))).To(Equal([]byte("host = web7\n")))

		code, out, _ = agent(args...)
		Expect(code).To(Equal(0))
		Expect(out).To(ContainSubstring("stable"))

		Expect(os.WriteFile(filepath.Join(src, "app.conf"), []byte("host = [[ facts.identity ]]\nport = 80\n"), 0o644)).To(Succeed())
		code, out, _ = agent(append(args, "--noop")...)
		Expect(code).To(Equal(5))
		Expect(out).To(ContainSubstring("would change: Would have changed 1 scaffold files"))
		Expect(os.ReadFile(filepath.Join(target, "app.conf"))).To(Equal([]byte("host = web7\n")))
	})
})
